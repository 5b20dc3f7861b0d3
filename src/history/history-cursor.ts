import {
  decodeOpaqueCursor,
  encodeOpaqueCursor,
  storedPositionOf,
} from '../common/opaque-cursor.js';
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

/**
 * A cursor of one user's history: `[direction, at, id]`, checked over the user id too, so one
 * taken from another user's history is a 400. (Nothing a cursor can say is beyond what
 * `before` and `after` can.)
 */
export function encodeCursor(userId: string, cursor: HistoryCursor): string {
  const { direction, position } = cursor;
  return encodeOpaqueCursor(scopeOf(userId), [direction, position.at, position.id]);
}

/** The cursor `token` holds for this user's history, or undefined when it is not one. */
export function decodeCursor(userId: string, token: string): HistoryCursor | undefined {
  const fields = decodeOpaqueCursor(scopeOf(userId), token, 3);
  if (!fields) return undefined;
  const [direction, at, id] = fields;
  if (direction !== 'next' && direction !== 'prev') return undefined;
  const position = storedPositionOf(at, id);
  return position && { direction, position };
}

function scopeOf(userId: string): string {
  return `prevnames-cursor\0${userId}`;
}
