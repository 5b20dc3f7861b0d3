import { ValidateBy } from 'class-validator';

/**
 * A class-validator rule: `message` names the property `$property` and the constraints
 * `$constraint1`, `$constraint2`…, as class-validator's own messages do (see `ruleMessage`).
 */
export function rule(
  name: string,
  message: string,
  validate: (value: unknown) => boolean,
  constraints: unknown[] = [],
): PropertyDecorator {
  return ValidateBy({ name, constraints, validator: { validate, defaultMessage: () => message } });
}

/** A rule's message, for a check made without class-validator. */
export function ruleMessage(message: string, property: string, constraints: unknown[] = []) {
  return message
    .replace('$property', property)
    .replace(/\$constraint(\d)/g, (_, n: string) => String(constraints[Number(n) - 1]));
}

/**
 * Rules for the identifiers and names the service stores. Lengths count Unicode code
 * points, so an emoji is one character, as a person counts it.
 */
export const CODE_POINT_LENGTH_MESSAGE =
  '$property must be between $constraint1 and $constraint2 characters long';

export const CodePointLength = (min: number, max: number) =>
  rule(
    'codePointLength',
    CODE_POINT_LENGTH_MESSAGE,
    (value) => hasCodePointLength(value, min, max),
    [min, max],
  );

export function hasCodePointLength(value: unknown, min: number, max: number): boolean {
  if (typeof value !== 'string') return false;
  // Stops counting past `max`, so a huge string costs little.
  let length = 0;
  for (const _ of value) {
    if (++length > max) return false;
  }
  return length >= min;
}

// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

export const PRINTABLE_TEXT_MESSAGE =
  '$property must not contain control characters or unpaired surrogates';

/** No C0/C1 control characters (newlines, NUL, escape…), and well-formed UTF-16. */
export const IsPrintableText = () =>
  rule('isPrintableText', PRINTABLE_TEXT_MESSAGE, isPrintableText);

export function isPrintableText(value: unknown): boolean {
  return typeof value === 'string' && value.isWellFormed() && !CONTROL_CHARACTERS.test(value);
}

/** Any text Postgres can store byte-for-byte: well-formed, and no NUL. */
export const IsStorableText = () =>
  rule(
    'isStorableText',
    '$property must not contain NUL characters or unpaired surrogates',
    (value) => typeof value === 'string' && value.isWellFormed() && !value.includes('\u0000'),
  );
