import { ValidateBy, ValidationOptions, buildMessage } from 'class-validator';

/**
 * Rules for the identifiers and names the service stores. Lengths count Unicode code
 * points, so an emoji is one character, as a person counts it.
 */
export function CodePointLength(min: number, max: number, options?: ValidationOptions) {
  return ValidateBy(
    {
      name: 'codePointLength',
      constraints: [min, max],
      validator: {
        validate: (value: unknown) => hasCodePointLength(value, min, max),
        defaultMessage: buildMessage((each) => `${each}${CODE_POINT_LENGTH_MESSAGE}`, options),
      },
    },
    options,
  );
}

const CODE_POINT_LENGTH_MESSAGE =
  '$property must be between $constraint1 and $constraint2 characters long';

export function hasCodePointLength(value: unknown, min: number, max: number): boolean {
  if (typeof value !== 'string') return false;
  const length = countCodePoints(value, max + 1);
  return length >= min && length <= max;
}

/** CodePointLength's message, for a check made without class-validator. */
export function codePointLengthMessage(property: string, min: number, max: number): string {
  return CODE_POINT_LENGTH_MESSAGE.replace('$property', property)
    .replace('$constraint1', String(min))
    .replace('$constraint2', String(max));
}

/** Counts code points, stopping early past `limit` so a huge string costs little. */
function countCodePoints(value: string, limit: number): number {
  let count = 0;
  for (const _ of value) {
    if (++count >= limit) break;
  }
  return count;
}

// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;

/** No C0/C1 control characters (newlines, NUL, escape…), and well-formed UTF-16. */
export function IsPrintableText(options?: ValidationOptions) {
  return ValidateBy(
    {
      name: 'isPrintableText',
      validator: {
        validate: isPrintableText,
        defaultMessage: buildMessage((each) => `${each}${PRINTABLE_TEXT_MESSAGE}`, options),
      },
    },
    options,
  );
}

const PRINTABLE_TEXT_MESSAGE =
  '$property must not contain control characters or unpaired surrogates';

export function isPrintableText(value: unknown): boolean {
  return typeof value === 'string' && value.isWellFormed() && !CONTROL_CHARACTERS.test(value);
}

/** IsPrintableText's message, for a check made without class-validator. */
export function printableTextMessage(property: string): string {
  return PRINTABLE_TEXT_MESSAGE.replace('$property', property);
}

/** Any text Postgres can store byte-for-byte: well-formed, and no NUL. */
export function IsStorableText(options?: ValidationOptions) {
  return ValidateBy(
    {
      name: 'isStorableText',
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' && value.isWellFormed() && !value.includes('\u0000'),
        defaultMessage: buildMessage(
          (each) => `${each}$property must not contain NUL characters or unpaired surrogates`,
          options,
        ),
      },
    },
    options,
  );
}
