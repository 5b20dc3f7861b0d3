import { createHash } from 'node:crypto';
import { MAX_POSTGRES_BIGINT } from '../common/postgres-bigint.js';

/** What a search asks: the cursor carries it, so that a page continues only its own query. */
export interface SearchQueryKey {
  name: string;
  /** Undefined: both types. */
  type?: string;
  match: string;
}

/** A place in the answer's order, (changedAt, id): the stored time to the microsecond, the id. */
export interface SearchPosition {
  at: string;
  id: string;
}

const AT_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const ID_PATTERN = /^[1-9]\d{0,18}$/;
const CHECK_LENGTH = 16;

/**
 * A cursor as it appears in a Link header: base64url of `[name, type, match, at, id]`, a dot,
 * and a check over that payload. The check is not a secret: it makes a cursor that was
 * changed or cut a 400 rather than a page of something else; the query it carries makes one
 * taken from another search a 400 too.
 */
export function encodeSearchCursor(query: SearchQueryKey, position: SearchPosition): string {
  const fields = [query.name, query.type ?? null, query.match, position.at, position.id];
  const payload = Buffer.from(JSON.stringify(fields)).toString('base64url');
  return `${payload}.${check(payload)}`;
}

/** The query and position `token` holds, or undefined when it is not a cursor of ours. */
export function decodeSearchCursor(
  token: string,
): { query: SearchQueryKey; position: SearchPosition } | undefined {
  const dot = token.indexOf('.');
  if (dot === -1) return undefined;
  const payload = token.slice(0, dot);
  if (token.slice(dot + 1) !== check(payload)) return undefined;
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(fields) || fields.length !== 5) return undefined;
  const [name, type, match, at, id] = fields as unknown[];
  if (typeof name !== 'string' || typeof match !== 'string') return undefined;
  if (type !== null && typeof type !== 'string') return undefined;
  if (typeof at !== 'string' || !isStoredTime(at)) return undefined;
  if (typeof id !== 'string' || !ID_PATTERN.test(id) || BigInt(id) > MAX_POSTGRES_BIGINT) {
    return undefined;
  }
  return { query: { name, type: type ?? undefined, match }, position: { at, id } };
}

/** Whether two queries are the same search (the limit aside). */
export function sameQuery(a: SearchQueryKey, b: SearchQueryKey): boolean {
  return a.name === b.name && a.type === b.type && a.match === b.match;
}

function check(payload: string): string {
  return createHash('sha256')
    .update(`prevnames-search-cursor\0${payload}`)
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
