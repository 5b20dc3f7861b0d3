import { BadRequestException } from '@nestjs/common';
import { storedPositionOf, type StoredPosition } from '../common/opaque-cursor.js';
import type { CursorSignerService } from '../cursors/index.js';
import { NAME_TYPES } from '../name-events/index.js';
import { CURSOR_MESSAGE, OTHER_QUERY_MESSAGE, SEARCH_MATCHES } from './search.dto.js';

/** What a search asks: the cursor carries it, so that a page continues only its own query. */
export interface SearchQueryKey {
  name: string;
  /** Undefined: both types. */
  type?: string;
  match: string;
}

/** What a search's cursor is signed for. */
export const SEARCH_CURSOR_SCOPE = 'prevnames-search-cursor';

/**
 * A search's cursor: `[name, type, match, at, id]`. The query it carries makes one taken from
 * another search a 400.
 */
export function encodeSearchCursor(
  signer: CursorSignerService,
  query: SearchQueryKey,
  position: StoredPosition,
): Promise<string> {
  const fields = [query.name, query.type ?? null, query.match, position.at, position.id];
  return signer.sign(SEARCH_CURSOR_SCOPE, fields);
}

/**
 * Where the page that `token` continues starts, for `query`. A 400 when it is not a cursor of
 * ours (not signed by this service for the search, or with a field no search could have
 * issued), or when it was issued for another search (the limit aside).
 */
export async function cursorPosition(
  signer: CursorSignerService,
  token: string,
  query: SearchQueryKey,
): Promise<StoredPosition> {
  const [name, type, match, at, id] = (await signer.open(SEARCH_CURSOR_SCOPE, token, 5)) ?? [];
  const position = storedPositionOf(at, id);
  const issued =
    typeof name === 'string' &&
    (type === null || (NAME_TYPES as readonly unknown[]).includes(type)) &&
    (SEARCH_MATCHES as readonly unknown[]).includes(match);
  if (!issued || !position) throw new BadRequestException(CURSOR_MESSAGE);
  if (name !== query.name || (type ?? undefined) !== query.type || match !== query.match) {
    throw new BadRequestException(OTHER_QUERY_MESSAGE);
  }
  return position;
}
