import { storedPositionOf, type StoredPosition } from '../common/opaque-cursor.js';
import type { CursorSignerService } from '../cursors/index.js';
import { NAME_TYPES } from '../name-events/index.js';
import { SEARCH_MATCHES } from './search.dto.js';

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
 * The query and position `token` holds, or undefined when it is not a cursor of ours: not
 * signed by this service for the search, or with a field no search could have issued.
 */
export async function decodeSearchCursor(
  signer: CursorSignerService,
  token: string,
): Promise<{ query: SearchQueryKey; position: StoredPosition } | undefined> {
  const [name, type, match, at, id] = (await signer.open(SEARCH_CURSOR_SCOPE, token, 5)) ?? [];
  if (typeof name !== 'string') return undefined;
  if (type !== null && !(NAME_TYPES as readonly unknown[]).includes(type)) return undefined;
  if (!(SEARCH_MATCHES as readonly unknown[]).includes(match)) return undefined;
  const position = storedPositionOf(at, id);
  return (
    position && {
      query: { name, type: (type as string | null) ?? undefined, match: match as string },
      position,
    }
  );
}

/** Whether two queries are the same search (the limit aside). */
export function sameQuery(a: SearchQueryKey, b: SearchQueryKey): boolean {
  return a.name === b.name && a.type === b.type && a.match === b.match;
}
