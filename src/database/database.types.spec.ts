import { DatabaseError } from 'pg';
import { QueryFailedError } from 'typeorm';
import { StorageUnavailableError, storageUnavailable } from './database.types.js';

/** An error as pg raises it for an ErrorResponse of Postgres. */
function postgresError(code: string, message: string, detail?: string): DatabaseError {
  const error = new DatabaseError(message, message.length, 'error');
  return Object.assign(error, { code, severity: 'ERROR', detail });
}

/** What a statement failing with `error` comes to: TypeORM wraps what Postgres answered. */
function failureOf(error: Error): StorageUnavailableError {
  const failed =
    error instanceof DatabaseError
      ? new QueryFailedError('SELECT $1::bigint', ['x'], error)
      : error;
  return storageUnavailable(failed);
}

describe('the StorageUnavailableError of a failed statement', () => {
  // Postgres' own messages, as it words them for these values.
  it.each([
    [
      '22P02',
      'invalid input syntax for type bigint: "Privé Qwzx"',
      'invalid input syntax for type bigint: "…"',
    ],
    [
      '22P02',
      'invalid input syntax for type integer: "a "quoted" b"',
      'invalid input syntax for type integer: "…"',
    ],
    [
      '22007',
      'invalid input syntax for type interval: "1 fortnight"',
      'invalid input syntax for type interval: "…"',
    ],
    [
      '22008',
      'date/time field value out of range: "0000-01-01T00:00:00.000000Z"',
      'date/time field value out of range: "…"',
    ],
    [
      '22003',
      'value "99999999999" is out of range for type integer',
      'value "…" is out of range for type integer',
    ],
    [
      '22021',
      'invalid byte sequence for encoding "UTF8": 0xe9 0x20 0x51',
      'invalid byte sequence for encoding "…": 0x…',
    ],
  ])(
    'drops the value a data exception (%s) quotes, keeps the rest and the SQLSTATE',
    (code, message, kept) => {
      const failure = failureOf(postgresError(code, message));
      expect(failure.message).toBe(`${kept} (SQLSTATE ${code})`);
      // The stack repeats the message: the value is not there either.
      expect(failure.stack).toMatch(new RegExp(`^StorageUnavailableError: ${escape(kept)}`));
      expect(`${failure.message} ${failure.stack}`).not.toMatch(
        /Privé|quoted|fortnight|0000-01|9999|UTF8|0xe9/,
      );
    },
  );

  it.each([
    ['57014', 'canceling statement due to statement timeout'],
    ['57P01', 'terminating connection due to administrator command'],
    ['23505', 'duplicate key value violates unique constraint "known_names_pkey"'],
    ['42P01', 'relation "name_change_events" does not exist'],
  ])(
    'keeps the message of another class (%s), its identifiers, and the SQLSTATE',
    (code, message) => {
      const failure = failureOf(
        // The detail, which quotes the row's values, is not kept.
        postgresError(code, message, 'Key (user_id)=(someone) already exists.'),
      );
      expect(failure.message).toBe(`${message} (SQLSTATE ${code})`);
      expect(failure.stack).not.toContain('someone');
    },
  );

  it('keeps the message of a connection failure as it is', () => {
    const failure = failureOf(new Error('connect ECONNREFUSED 127.0.0.1:5432'));
    expect(failure.message).toBe('connect ECONNREFUSED 127.0.0.1:5432');
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
