import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

/**
 * Only a plain decimal becomes a number: "12abc" or "1e3" stay strings and fail @IsInt, so the
 * message shows what was given.
 */
const ToInteger = () =>
  Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value,
  );

/**
 * An optional integer from `min` to `max`, written as a plain decimal: a variable, or a query
 * value. `message`: what any of its errors says, instead of class-validator's.
 */
export const IsIntegerBetween = (min: number, max: number, message?: string) =>
  applyDecorators(
    IsOptional(),
    ToInteger(),
    IsInt({ message }),
    Min(min, { message }),
    Max(max, { message }),
  );

/** "true" and "false" become booleans; anything else stays a string and fails @IsBoolean. */
export const ToBoolean = () =>
  Transform(({ value }: { value: unknown }) =>
    value === 'true' ? true : value === 'false' ? false : value,
  );

/** `host:port,host:port,…` as a list. */
export function parseHostPorts(
  value: string | undefined,
): { host: string; port: number }[] | undefined {
  return value?.split(',').map((entry) => {
    const [host, port] = entry.trim().split(':');
    return { host, port: Number(port) };
  });
}

/** A comma-separated list of `host:port`. */
export const HOST_PORT_LIST = /^\s*[^\s:,]+:\d{1,5}\s*(,\s*[^\s:,]+:\d{1,5}\s*)*$/;
