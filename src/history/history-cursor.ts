import { createHash } from 'node:crypto';
import { MAX_POSTGRES_BIGINT } from '../common/postgres-bigint.js';
import type { HistoryPosition } from '../name-events/name-history.repository.js';

/**
 * Which way a cursor leads: `next` to the entries after its position, `prev` to the entries
 * before it.
 */
export type CursorDirection = 'next' | 'prev';

export interface HistoryCursor {
  direction: CursorDirection;
  position: HistoryPosition;
}

const AT_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const ID_PATTERN = /^[1-9]\d{0,18}$/;
const CHECK_LENGTH = 16;

/**
 * A cursor as it appears in a Link header: base64url of `[direction, at, id]`, a dot, and a
 * check over the user id and that payload. The check is not a secret: it makes a cursor that
 * was changed, cut, or taken from another user's history a 400 rather than a page of
 * something else. (Nothing a cursor can say is beyond what `before` and `after` can.)
 */
export function encodeCursor(userId: string, cursor: HistoryCursor): string {
  const payload = Buffer.from(
    JSON.stringify([cursor.direction, cursor.position.at, cursor.position.id]),
  ).toString('base64url');
  return `${payload}.${check(userId, payload)}`;
}

/** The cursor `token` holds for this user's history, or undefined when it is not one. */
export function decodeCursor(userId: string, token: string): HistoryCursor | undefined {
  const dot = token.indexOf('.');
  if (dot === -1) return undefined;
  const payload = token.slice(0, dot);
  if (token.slice(dot + 1) !== check(userId, payload)) return undefined;
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(fields) || fields.length !== 3) return undefined;
  const [direction, at, id] = fields as unknown[];
  if (direction !== 'next' && direction !== 'prev') return undefined;
  if (typeof at !== 'string' || !isStoredTime(at)) return undefined;
  if (typeof id !== 'string' || !ID_PATTERN.test(id)) return undefined;
  if (BigInt(id) > MAX_POSTGRES_BIGINT) return undefined;
  return { direction, position: { at, id } };
}

function check(userId: string, payload: string): string {
  return createHash('sha256')
    .update(`prevnames-cursor\0${userId}\0${payload}`)
    .digest('base64url')
    .slice(0, CHECK_LENGTH);
}

/** A real UTC time in the repository's microsecond form (Postgres would refuse the 31st of June). */
function isStoredTime(at: string): boolean {
  if (!AT_PATTERN.test(at)) return false;
  const millis = `${at.slice(0, 23)}Z`;
  const date = new Date(millis);
  return !Number.isNaN(date.getTime()) && date.toISOString() === millis;
}
