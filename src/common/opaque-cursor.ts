import { MAX_POSTGRES_BIGINT } from './postgres-bigint.js';

/** The repositories' microsecond form of a stored time, in UTC, with a 4-digit year. */
const AT_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const ID_PATTERN = /^[1-9]\d{0,18}$/;

/**
 * A place in an answer's order, (changedAt, id): the stored time to the microsecond
 * (`YYYY-MM-DDTHH:MM:SS.ffffffZ`, or `-infinity` / `infinity` for the ends) and the stored id.
 */
export interface StoredPosition {
  at: string;
  id: string;
}

/**
 * The stored position a cursor's `at` and `id` fields name, or undefined when they do not.
 * A signed cursor is still input: every field is checked to be one the repositories could
 * have produced before it reaches a statement, where Postgres would refuse it (a 500).
 */
export function storedPositionOf(at: unknown, id: unknown): StoredPosition | undefined {
  if (typeof at !== 'string' || !isStoredTime(at)) return undefined;
  if (typeof id !== 'string' || !ID_PATTERN.test(id)) return undefined;
  if (BigInt(id) > MAX_POSTGRES_BIGINT) return undefined;
  return { at, id };
}

/**
 * A real UTC time of the years 0001-9999 in the repositories' microsecond form: what a stored
 * event can have (the publish body's range). JavaScript takes year 0000 (1 BC), which
 * Postgres refuses, and the 31st of June, which it also refuses.
 */
function isStoredTime(at: string): boolean {
  if (!AT_PATTERN.test(at) || at.startsWith('0000')) return false;
  const millis = `${at.slice(0, 23)}Z`;
  const date = new Date(millis);
  return !Number.isNaN(date.getTime()) && date.toISOString() === millis;
}
