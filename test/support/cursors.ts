import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { CursorSignerService } from '../../src/cursors/cursor-signer.service.js';
import type { DataSource } from 'typeorm';
import type { TestDatabase } from './database.js';

/**
 * Cursors made outside the service, for the tests that forge them: signed with the key the
 * service keeps in its database (what only someone who can read that database could do:
 * every field is still checked), and the unkeyed ones that versions before the key issued,
 * whose check anyone could compute.
 */

/** A signer with the key of `db`'s `cursor_keys`, as the service signs. */
export function signerOf(db: TestDatabase): CursorSignerService {
  const dataSource = { query: (text: string) => db.query(text) };
  return new CursorSignerService(dataSource as unknown as DataSource);
}

/** A cursor as versions before the key made it: an unkeyed sha256 over scope and payload. */
export function unkeyedCursor(scope: string, fields: readonly unknown[]): string {
  const payload = Buffer.from(JSON.stringify(fields)).toString('base64url');
  const check = createHash('sha256').update(`${scope}\0${payload}`).digest('base64url');
  return `${payload}.${check.slice(0, 16)}`;
}

/** The `cursor` parameter of a Link header's (only) target. */
export function cursorOfLink(link: string | null): string {
  const target = /^<([^<>]+)>; rel="(next|prev)"$/.exec(link ?? '')?.[1];
  if (target === undefined) throw new Error(`Not a link: ${link}`);
  return new URL(target, 'http://localhost').searchParams.get('cursor')!;
}

/**
 * Stored times, ids and other fields that no cursor of the service holds, each named: what
 * a forged cursor may carry, and the route must refuse with a 400 before any statement.
 */
export const BAD_TIMES: [string, unknown][] = [
  ['year 0000', '0000-01-01T00:00:00.000000Z'],
  ['the last instant of year 0000', '0000-12-31T23:59:59.999999Z'],
  ['year 10000, five digits', '10000-01-01T00:00:00.000000Z'],
  ['year 10000, expanded form', '+010000-01-01T00:00:00.000000Z'],
  ['year 2024, expanded form', '+002024-01-01T12:00:00.000000Z'],
  ['a negative year', '-000001-01-01T00:00:00.000000Z'],
  ['infinity', 'infinity'],
  ['-infinity', '-infinity'],
  ['February 30', '2024-02-30T12:00:00.000000Z'],
  ['February 29 of a common year', '2023-02-29T12:00:00.000000Z'],
  ['June 31', '2024-06-31T12:00:00.000000Z'],
  ['month 13', '2024-13-01T12:00:00.000000Z'],
  ['hour 24', '2024-01-01T24:00:00.000000Z'],
  ['a leap second', '2016-12-31T23:59:60.000000Z'],
  ['milliseconds', '2024-01-01T12:00:00.000Z'],
  ['nanoseconds', '2024-01-01T12:00:00.000000000Z'],
  ['an offset', '2024-01-01T12:00:00.000000+00:00'],
  ['no zone', '2024-01-01T12:00:00.000000'],
  ['a space for the T', '2024-01-01 12:00:00.000000Z'],
  ['a date alone', '2024-01-01'],
  ['a word', 'now'],
  ['empty', ''],
  ['a number', 1704110400000],
  ['null', null],
  ['an object', { at: '2024-01-01T12:00:00.000000Z' }],
  ['an array', ['2024-01-01T12:00:00.000000Z']],
];

export const BAD_IDS: [string, unknown][] = [
  ['0', '0'],
  ['negative', '-1'],
  ['a leading zero', '01'],
  ['a fraction', '1.5'],
  ['an exponent', '1e3'],
  ['a space', ' 1'],
  ['hexadecimal', '0x10'],
  ['past bigint', '9223372036854775808'],
  ['twenty digits', '99999999999999999999'],
  ['empty', ''],
  ['a number', 1],
  ['null', null],
  ['true', true],
  ['an object', { id: '1' }],
];

/**
 * Fields a forged cursor may carry, near what the service issues and far from it: times of
 * every year 0-10999 with every part one past its range, ids around 0 and past bigint, and
 * any JSON at all.
 */
export const cursorArbitraries = (() => {
  const digits = (n: number, width: number) => String(n).padStart(width, '0');
  const time = fc
    .tuple(
      fc.integer({ min: 0, max: 10999 }),
      fc.integer({ min: 0, max: 13 }),
      fc.integer({ min: 0, max: 32 }),
      fc.integer({ min: 0, max: 25 }),
      fc.integer({ min: 0, max: 61 }),
      fc.integer({ min: 0, max: 61 }),
      fc.integer({ min: 0, max: 999999 }),
      fc.constantFrom('', '+', '-', '+0', '00'),
    )
    .map(
      ([y, mo, d, h, mi, s, us, sign]) =>
        `${sign}${digits(y, 4)}-${digits(mo, 2)}-${digits(d, 2)}T${digits(h, 2)}:${digits(mi, 2)}:${digits(s, 2)}.${digits(us, 6)}Z`,
    );
  const id = fc.oneof(
    fc.bigInt({ min: -2n, max: 2n ** 64n }).map(String),
    fc.bigInt({ min: 9223372036854775800n, max: 9223372036854775815n }).map(String),
    fc.constantFrom('0', '00', '01', '1.0', '1e2', ' 1', '1 ', '0x1', '+1', ''),
  );
  const any = fc.jsonValue({ maxDepth: 2 });
  return {
    time: fc.oneof(time, any),
    id: fc.oneof(id, id, any),
    any,
  };
})();
