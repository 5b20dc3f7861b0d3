const NEEDS_ESCAPE = /["\\]/;

/**
 * A text[] parameter as Postgres's array literal, for statements that send thousands of
 * values: node-postgres runs two regular expressions over every element, which was most of
 * the detector's serialisation cost; here only an element holding a quote or a backslash is
 * rewritten. Null elements are NULL.
 */
export function textArray(values: readonly (string | null)[]): string {
  let literal = '{';
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) literal += ',';
    if (value === null) literal += 'NULL';
    else if (NEEDS_ESCAPE.test(value)) literal += `"${value.replace(/["\\]/g, '\\$&')}"`;
    else literal += `"${value}"`;
  }
  return `${literal}}`;
}
