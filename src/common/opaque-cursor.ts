import { createHash } from 'node:crypto';
import { MAX_POSTGRES_BIGINT } from './postgres-bigint.js';

const AT_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const ID_PATTERN = /^[1-9]\d{0,18}$/;
const CHECK_LENGTH = 16;

/** A place in an answer's order: the stored time to the microsecond, and the stored id. */
export interface StoredPosition {
  at: string;
  id: string;
}

/**
 * A cursor as it appears in a Link header: base64url of the JSON `fields`, a dot, and a check
 * over `scope` and that payload. The check is not a secret: it makes a cursor that was
 * changed, cut, or made for another scope (another user's history, the search) a 400 rather
 * than a page of something else.
 */
export function encodeOpaqueCursor(scope: string, fields: readonly unknown[]): string {
  const payload = Buffer.from(JSON.stringify(fields)).toString('base64url');
  return `${payload}.${check(scope, payload)}`;
}

/** The `count` fields `token` holds for `scope`, or undefined when it is not such a cursor. */
export function decodeOpaqueCursor(
  scope: string,
  token: string,
  count: number,
): unknown[] | undefined {
  const dot = token.indexOf('.');
  if (dot === -1) return undefined;
  const payload = token.slice(0, dot);
  if (token.slice(dot + 1) !== check(scope, payload)) return undefined;
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  return Array.isArray(fields) && fields.length === count ? fields : undefined;
}

/** The stored position a cursor's `at` and `id` fields name, or undefined when they do not. */
export function storedPositionOf(at: unknown, id: unknown): StoredPosition | undefined {
  if (typeof at !== 'string' || !isStoredTime(at)) return undefined;
  if (typeof id !== 'string' || !ID_PATTERN.test(id)) return undefined;
  if (BigInt(id) > MAX_POSTGRES_BIGINT) return undefined;
  return { at, id };
}

function check(scope: string, payload: string): string {
  return createHash('sha256')
    .update(`${scope}\0${payload}`)
    .digest('base64url')
    .slice(0, CHECK_LENGTH);
}

/** A real UTC time in the repositories' microsecond form (Postgres would refuse the 31st of June). */
function isStoredTime(at: string): boolean {
  if (!AT_PATTERN.test(at)) return false;
  const millis = `${at.slice(0, 23)}Z`;
  const date = new Date(millis);
  return !Number.isNaN(date.getTime()) && date.toISOString() === millis;
}
