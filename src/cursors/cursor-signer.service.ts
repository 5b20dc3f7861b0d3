import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { DataSource } from 'typeorm';
import { StorageUnavailableError } from '../database/index.js';

/** Base64url characters of a cursor's signature: the first 128 bits of its HMAC-SHA256. */
const SIGNATURE_LENGTH = 22;
/** A payload (base64url), a dot, a signature: the only shape a cursor of ours has. */
const CURSOR_SHAPE = new RegExp(`^([A-Za-z0-9_-]+)\\.([A-Za-z0-9_-]{${SIGNATURE_LENGTH}})$`);
/** The migration makes 32 bytes; anything shorter is not that key. */
const KEY_MIN_BYTES = 32;

/**
 * Signs and opens the opaque cursors of the Link headers: base64url of the JSON `fields`, a
 * dot, and an HMAC-SHA256 over `scope` and that payload, keyed with the one key of
 * `cursor_keys` (made once by this module's migration). Only the service can make a cursor,
 * so one that was changed, cut, forged, or made for another scope (another user's history,
 * the search) is no cursor; the routes still range-check every field, as input.
 *
 * The key is read on first use, not at start (the service starts while Postgres is down),
 * then kept; a read that fails is tried again by the next use. A cursor that cannot be
 * checked for want of the key rejects with StorageUnavailableError, as any read would.
 */
@Injectable()
export class CursorSignerService {
  private key?: Promise<Buffer>;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The cursor of `fields` in `scope`. */
  async sign(scope: string, fields: readonly unknown[]): Promise<string> {
    const payload = Buffer.from(JSON.stringify(fields)).toString('base64url');
    return `${payload}.${signature(await this.secret(), scope, payload)}`;
  }

  /**
   * The `count` fields of `token` when this service signed it for `scope`, or undefined.
   * A token without a cursor's shape is refused before the key is needed.
   */
  async open(scope: string, token: string, count: number): Promise<unknown[] | undefined> {
    const shape = CURSOR_SHAPE.exec(token);
    if (!shape) return undefined;
    const [, payload, given] = shape;
    const expected = signature(await this.secret(), scope, payload);
    if (!timingSafeEqual(Buffer.from(given), Buffer.from(expected))) return undefined;
    let fields: unknown;
    try {
      fields = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      return undefined;
    }
    return Array.isArray(fields) && fields.length === count ? fields : undefined;
  }

  /** The key, read once; a failed read is forgotten, so the next use tries again. */
  private secret(): Promise<Buffer> {
    // On the data source, outside any transaction: the read serves every caller to come.
    this.key ??= this.load().catch((error: unknown) => {
      this.key = undefined;
      throw error;
    });
    return this.key;
  }

  private async load(): Promise<Buffer> {
    // The application's data source fails every statement with a StorageUnavailableError.
    const rows = await this.dataSource.query<{ key: Buffer }[]>(
      'SELECT key FROM cursor_keys WHERE id = 1',
    );
    const key = rows[0]?.key;
    if (!Buffer.isBuffer(key) || key.length < KEY_MIN_BYTES) {
      throw new StorageUnavailableError('cursor_keys holds no cursor key');
    }
    return key;
  }
}

function signature(key: Buffer, scope: string, payload: string): string {
  // The payload is base64url, which has no NUL: the last NUL parts the scope from it.
  return createHmac('sha256', key)
    .update(`${scope}\0${payload}`)
    .digest('base64url')
    .slice(0, SIGNATURE_LENGTH);
}
