import { storedPositionOf, type StoredPosition } from '../common/opaque-cursor.js';
import type { CursorSignerService } from '../cursors/index.js';

/**
 * Which way a cursor leads: `next` to the entries after its position, `prev` to the entries
 * before it.
 */
export type CursorDirection = 'next' | 'prev';

export interface HistoryCursor {
  direction: CursorDirection;
  position: StoredPosition;
}

/**
 * A cursor of one user's history: `[direction, at, id]`, signed over the user id too, so one
 * taken from another user's history is a 400. (Nothing a cursor can say is beyond what
 * `before` and `after` can.)
 */
export function encodeCursor(
  signer: CursorSignerService,
  userId: string,
  cursor: HistoryCursor,
): Promise<string> {
  const { direction, position } = cursor;
  return signer.sign(historyCursorScope(userId), [direction, position.at, position.id]);
}

/**
 * The cursor `token` holds for this user's history, or undefined when it is not one: not
 * signed by this service for this user, or with a field no page could have ended on.
 */
export async function decodeCursor(
  signer: CursorSignerService,
  userId: string,
  token: string,
): Promise<HistoryCursor | undefined> {
  const fields = await signer.open(historyCursorScope(userId), token, 3);
  if (!fields) return undefined;
  const [direction, at, id] = fields;
  if (direction !== 'next' && direction !== 'prev') return undefined;
  const position = storedPositionOf(at, id);
  return position && { direction, position };
}

/** What a cursor of this user's history is signed for. */
export function historyCursorScope(userId: string): string {
  return `prevnames-cursor\0${userId}`;
}
