import { DatabaseError } from 'pg';
import { QueryFailedError } from 'typeorm';

/** The database could not be reached, or failed a statement it should not have. */
export class StorageUnavailableError extends Error {
  override readonly name = 'StorageUnavailableError';
}

/** `error`, a failure of the database, as a StorageUnavailableError. */
export function storageUnavailable(error: unknown): StorageUnavailableError {
  if (error instanceof StorageUnavailableError) return error;
  return new StorageUnavailableError(messageOf(error));
}

/**
 * The message of a failed statement, for the logs: Postgres' own, with its SQLSTATE (never
 * the statement's parameters, which TypeORM's QueryFailedError carries). The message of a
 * data exception (class 22) quotes the value it refused (`invalid input syntax for type
 * bigint: "…"`, `date/time field value out of range: "…"`), which may be what a request
 * sent: every quoted span and byte sequence in it is dropped, the rest (what was refused, the
 * type, the code) kept. The other classes quote what the statement itself names (a
 * constraint, a relation), which is the code's: values reach a statement as parameters, which
 * only a data exception quotes. A detail (`Key (id)=(…)`) is not kept.
 */
function messageOf(error: unknown): string {
  const cause = error instanceof QueryFailedError ? (error.driverError as unknown) : error;
  const message = cause instanceof Error ? cause.message : String(cause);
  if (!(cause instanceof DatabaseError) || typeof cause.code !== 'string') return message;
  const shown = cause.code.startsWith('22') ? withoutValues(message) : message;
  return `${shown} (SQLSTATE ${cause.code})`;
}

/**
 * `text` with what lies between its first and last double quote, and any byte sequence
 * (`0xe2 0x82`), replaced: a value Postgres quotes may itself hold quotes.
 */
function withoutValues(text: string): string {
  return text.replace(/"[\s\S]*"/, '"…"').replace(/0x[0-9a-f]+(?:\s+0x[0-9a-f]+)*/gi, '0x…');
}

// The parameter format of the statements that send thousands of values.
export { textArray } from './text-array.js';
