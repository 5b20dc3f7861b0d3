import {
  decodeOpaqueCursor,
  encodeOpaqueCursor,
  storedPositionOf,
  type StoredPosition,
} from '../common/opaque-cursor.js';

/** What a search asks: the cursor carries it, so that a page continues only its own query. */
export interface SearchQueryKey {
  name: string;
  /** Undefined: both types. */
  type?: string;
  match: string;
}

/** A place in the answer's order, (changedAt, id): the stored time to the microsecond, the id. */
export type SearchPosition = StoredPosition;

const SCOPE = 'prevnames-search-cursor';

/**
 * A search's cursor: `[name, type, match, at, id]`. The query it carries makes one taken from
 * another search a 400.
 */
export function encodeSearchCursor(query: SearchQueryKey, position: SearchPosition): string {
  const fields = [query.name, query.type ?? null, query.match, position.at, position.id];
  return encodeOpaqueCursor(SCOPE, fields);
}

/** The query and position `token` holds, or undefined when it is not a cursor of ours. */
export function decodeSearchCursor(
  token: string,
): { query: SearchQueryKey; position: SearchPosition } | undefined {
  const fields = decodeOpaqueCursor(SCOPE, token, 5);
  if (!fields) return undefined;
  const [name, type, match, at, id] = fields;
  if (typeof name !== 'string' || typeof match !== 'string') return undefined;
  if (type !== null && typeof type !== 'string') return undefined;
  const position = storedPositionOf(at, id);
  return position && { query: { name, type: type ?? undefined, match }, position };
}

/** Whether two queries are the same search (the limit aside). */
export function sameQuery(a: SearchQueryKey, b: SearchQueryKey): boolean {
  return a.name === b.name && a.type === b.type && a.match === b.match;
}
