import { rule } from './string-rules.js';

// Date and time, optional seconds and fraction, and an explicit zone: Z or ±hh:mm.
const ZONED_ISO_8601 =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:(Z)|([+-])(\d{2}):(\d{2}))$/;

/**
 * Parses an ISO 8601 timestamp that states its zone, to the millisecond. Anything else
 * (no zone, impossible dates such as February 30, years outside 0001-9999 once in UTC)
 * is undefined.
 */
export function parseZonedTimestamp(value: string): Date | undefined {
  const match = ZONED_ISO_8601.exec(value);
  if (!match) return undefined;
  const [, year, month, day, hour, minute, second = '0', fraction = '', , sign, offH, offM] = match;
  const [y, mo, d, h, mi, s] = [year, month, day, hour, minute, second].map(Number);
  if (h > 23 || mi > 59 || s > 59) return undefined;
  const offsetMinutes = sign ? (Number(offH) * 60 + Number(offM)) * (sign === '-' ? -1 : 1) : 0;
  if (sign && (Number(offH) > 23 || Number(offM) > 59)) return undefined;
  const utc = new Date(0);
  utc.setUTCFullYear(y, mo - 1, d);
  // An impossible date (February 30, a 13th month, day 0) rolls over into another month.
  if (utc.getUTCMonth() !== mo - 1 || utc.getUTCDate() !== d) return undefined;
  utc.setUTCHours(h, mi, s, Number(fraction.padEnd(3, '0').slice(0, 3)));
  const result = new Date(utc.getTime() - offsetMinutes * 60_000);
  const utcYear = result.getUTCFullYear();
  return utcYear >= 1 && utcYear <= 9999 ? result : undefined;
}

export const IsZonedTimestamp = () =>
  rule(
    'isZonedTimestamp',
    '$property must be an ISO 8601 timestamp with a zone (Z or ±hh:mm), e.g. 2024-06-07T15:30:00.000Z',
    (value) => typeof value === 'string' && parseZonedTimestamp(value) !== undefined,
  );
