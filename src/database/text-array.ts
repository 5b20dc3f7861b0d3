const NEEDS_ESCAPE = /["\\]/;

/**
 * A text[] parameter as Postgres's array literal, for statements that send thousands of
 * values: node-postgres runs two regular expressions over every element, which was most of
 * the detector's serialisation cost; here only an element holding a quote or a backslash is
 * rewritten. Null elements are NULL.
 * Made by one join, the braces joined with the end elements, so that the literal comes out
 * flat (node-postgres would copy a concatenation once more to measure it) and each element
 * is copied once: building it element by element made three short-lived strings of each.
 */
export function textArray(values: readonly (string | null)[]): string {
  if (values.length === 0) return '{}';
  const plain = values.every((value) => value !== null && !NEEDS_ESCAPE.test(value));
  const elements = plain ? [...(values as readonly string[])] : values.map(element);
  const last = elements.length - 1;
  const [open, close] = plain ? ['{"', '"}'] : ['{', '}'];
  elements[0] = open + elements[0];
  elements[last] = elements[last] + close;
  return elements.join(plain ? '","' : ',');
}

function element(value: string | null): string {
  if (value === null) return 'NULL';
  if (NEEDS_ESCAPE.test(value)) return `"${value.replace(/["\\]/g, '\\$&')}"`;
  return `"${value}"`;
}
