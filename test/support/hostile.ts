import type pg from 'pg';
import { JSON_TYPE, PUBLISH } from './api.js';
import type { AppFixture } from './app.js';
import { nodeRefusal } from './http-answers.js';
import { rawRequest } from './raw-http.js';

/**
 * A request no client would send, written byte for byte, and its exact answer: a status and
 * the error contract's message, or NODE for the bare answer Node's HTTP server gives by
 * itself to what it refuses before the application sees it.
 */
export type HostileCase = [
  name: string,
  raw: string | Buffer,
  status: number,
  message: string | typeof NODE,
];

/** The case's answer is Node's own: its status, no body (see nodeRefusal). */
export const NODE = Symbol('Node’s own answer');

/** A POST to the publish route carrying these bytes as its JSON body. */
export const postBytes = (bytes: Buffer) =>
  Buffer.concat([
    Buffer.from(
      `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${bytes.length}\r\nConnection: close\r\n\r\n`,
    ),
    bytes,
  ]);

export const post = (body: string) => postBytes(Buffer.from(body));

/** A valid publish body, with `fields` replaced. */
export const publishBody = (fields: Record<string, unknown> = {}) =>
  JSON.stringify({
    userId: 'attacker',
    type: 'username',
    name: 'n',
    changedAt: '2024-06-07T15:30:00.000Z',
    ...fields,
  });

/** JSON objects nested `depth` deep around `inner`. */
export const nested = (depth: number, inner = '1') =>
  `${'{"a":'.repeat(depth)}${inner}${'}'.repeat(depth)}`;

/** A request with this request line and extra head lines, with Host. */
export const request = (line: string, head = '') =>
  `${line}\r\nHost: 127.0.0.1\r\n${head}Connection: close\r\n\r\n`;

/**
 * Each case gets exactly its status and `{message, code}` as JSON (or Node's own bytes), stores nothing and pollutes
 * no prototype. Call in a describe block's body, after `useApp()`.
 */
export function itRefusesEachExactly(fx: AppFixture, cases: HostileCase[]): void {
  let client: pg.Client;

  beforeAll(async () => {
    client = await fx.db.connect();
  });

  const rowCount = async () =>
    (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM name_change_events')).rows[0]
      .n;

  it.each(
    cases.map(
      ([name, raw, status, message]) =>
        [
          `${name} → ${status}${message === NODE ? ' (Node’s own)' : ''}`,
          raw,
          status,
          message,
        ] as const,
    ),
  )('%s', async (_case, raw, status, message) => {
    const before = await rowCount();
    const res = await rawRequest(fx.port, raw);
    if (message === NODE) {
      expect(res.raw.toString('latin1')).toBe(nodeRefusal(status as 400 | 408 | 413 | 431));
    } else {
      expect({ status: res.status, type: res.headers['content-type'] }).toEqual({
        status,
        type: JSON_TYPE,
      });
      expect(JSON.parse(res.body)).toEqual({ message, code: status });
    }
    expect(await rowCount()).toBe(before);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });
}
