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
        validate: (value: unknown) => {
          if (typeof value !== 'string') return false;
          const length = countCodePoints(value, max + 1);
          return length >= min && length <= max;
        },
        defaultMessage: buildMessage(
          (each) =>
            `${each}$property must be between $constraint1 and $constraint2 characters long`,
          options,
        ),
      },
    },
    options,
  );
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
        validate: (value: unknown) =>
          typeof value === 'string' && value.isWellFormed() && !CONTROL_CHARACTERS.test(value),
        defaultMessage: buildMessage(
          (each) => `${each}$property must not contain control characters or unpaired surrogates`,
          options,
        ),
      },
    },
    options,
  );
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
