import { describe, expect, it } from '@jest/globals';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { StorageUnavailableError } from '../database/database.types.js';
import { CursorSignerService } from './cursor-signer.service.js';

const SCOPE = 'prevnames-cursor\0u1';
const FIELDS = ['next', '2024-01-01T12:00:00.000000Z', '42'];

/** The key table, as the data source would answer it: each read takes the next answer given. */
class KeyTable {
  reads = 0;
  constructor(private readonly answers: (() => unknown)[]) {}

  readonly sql = {
    query: async () => {
      const answer = this.answers[Math.min(this.reads++, this.answers.length - 1)];
      await Promise.resolve();
      return answer();
    },
  } as unknown as DataSource;
}

const keyed = (key: Buffer = randomBytes(32)) => {
  const table = new KeyTable([() => [{ key }]]);
  return { table, signer: new CursorSignerService(table.sql) };
};

/** A cursor of the old scheme: the same payload, and an unkeyed sha256 anyone can compute. */
function unkeyed(scope: string, fields: readonly unknown[]): string {
  const payload = Buffer.from(JSON.stringify(fields)).toString('base64url');
  const check = createHash('sha256').update(`${scope}\0${payload}`).digest('base64url');
  return `${payload}.${check.slice(0, 16)}`;
}

/** `payload` signed as the service signs (HMAC-SHA256 with the key), whatever bytes it holds. */
function signedWith(key: Buffer, scope: string, payload: string): string {
  const mac = createHmac('sha256', key).update(`${scope}\0${payload}`).digest('base64url');
  return `${payload}.${mac.slice(0, 22)}`;
}

describe('CursorSignerService', () => {
  it('opens the cursors it signs, for their scope, with their fields', async () => {
    const { signer } = keyed();
    const cursor = await signer.sign(SCOPE, FIELDS);
    expect(cursor).toMatch(/^[\w-]+\.[\w-]{22}$/);
    expect(await signer.open(SCOPE, cursor, 3)).toEqual(FIELDS);
  });

  it('refuses a cursor of another scope, another key, another field count', async () => {
    const { signer } = keyed();
    const cursor = await signer.sign(SCOPE, FIELDS);
    expect(await signer.open('prevnames-cursor\0u2', cursor, 3)).toBeUndefined();
    expect(await signer.open('prevnames-search-cursor', cursor, 3)).toBeUndefined();
    expect(await keyed().signer.open(SCOPE, cursor, 3)).toBeUndefined();
    expect(await signer.open(SCOPE, cursor, 2)).toBeUndefined();
  });

  it('refuses every change of a character, and every cut', async () => {
    const { signer } = keyed();
    const cursor = await signer.sign(SCOPE, FIELDS);
    for (let i = 0; i < cursor.length; i++) {
      const changed = `${cursor.slice(0, i)}${cursor[i] === 'A' ? 'B' : 'A'}${cursor.slice(i + 1)}`;
      expect(await signer.open(SCOPE, changed, 3)).toBeUndefined();
      expect(await signer.open(SCOPE, cursor.slice(0, i), 3)).toBeUndefined();
    }
    expect(await signer.open(SCOPE, `${cursor}A`, 3)).toBeUndefined();
  });

  it('refuses the unkeyed cursors handed out before, whatever their length', async () => {
    const { signer } = keyed();
    const old = unkeyed(SCOPE, FIELDS);
    expect(await signer.open(SCOPE, old, 3)).toBeUndefined();
    const [payload] = old.split('.');
    const fullLength = createHash('sha256').update(`${SCOPE}\0${payload}`).digest('base64url');
    expect(await signer.open(SCOPE, `${payload}.${fullLength.slice(0, 22)}`, 3)).toBeUndefined();
  });

  it('refuses what has no cursor shape without reading the key', async () => {
    const { table, signer } = keyed();
    for (const token of [
      '',
      '.',
      'garbage',
      'a.b',
      `a.${'A'.repeat(21)}`,
      `a b.${'A'.repeat(22)}`,
    ]) {
      expect(await signer.open(SCOPE, token, 3)).toBeUndefined();
    }
    expect(table.reads).toBe(0);
  });

  it('signs with HMAC-SHA256 of the key, and refuses a signed payload that is not a JSON array', async () => {
    const key = randomBytes(32);
    const { signer } = keyed(key);
    const payload = Buffer.from(JSON.stringify(FIELDS)).toString('base64url');
    expect(await signer.sign(SCOPE, FIELDS)).toBe(signedWith(key, SCOPE, payload));
    for (const text of ['not json', '{"0":1,"1":2,"2":3}', '"abc"', '3', 'null', '\u00ff\u00fe']) {
      const token = signedWith(key, SCOPE, Buffer.from(text, 'latin1').toString('base64url'));
      expect(await signer.open(SCOPE, token, 3)).toBeUndefined();
    }
  });

  it('reads the key once, on first use, however many use it at once', async () => {
    const { table, signer } = keyed();
    expect(table.reads).toBe(0);
    const cursors = await Promise.all(
      Array.from({ length: 20 }, (_, i) => signer.sign(SCOPE, [i])),
    );
    expect(await Promise.all(cursors.map((cursor) => signer.open(SCOPE, cursor, 1)))).toEqual(
      cursors.map((_, i) => [i]),
    );
    expect(table.reads).toBe(1);
  });

  it('fails as storage while the key cannot be read, then reads it again', async () => {
    const key = randomBytes(32);
    const table = new KeyTable([
      () => {
        throw new StorageUnavailableError('connect ECONNREFUSED 127.0.0.1:5432');
      },
      () => {
        throw new StorageUnavailableError('relation "cursor_keys" does not exist (SQLSTATE 42P01)');
      },
      () => [],
      () => [{ key: key.subarray(0, 16) }],
      () => [{ key }],
    ]);
    const signer = new CursorSignerService(table.sql);
    const signed = await keyed(key).signer.sign(SCOPE, FIELDS);
    for (let attempt = 0; attempt < 4; attempt++) {
      await expect(signer.open(SCOPE, signed, 3)).rejects.toBeInstanceOf(StorageUnavailableError);
    }
    expect(await signer.open(SCOPE, signed, 3)).toEqual(FIELDS);
    expect(await signer.sign(SCOPE, FIELDS)).toBe(signed);
    expect(table.reads).toBe(5);
  });
});
