import { EventSource } from 'eventsource';
import type pg from 'pg';
import { JSON_TYPE, LISTEN, PUBLISH } from './support/api.js';
import { useApp } from './support/app.js';
import { nameEvent, uniqueUserId } from './support/events.js';
import { http } from './support/http.js';
import { failTestsOnProcessFailures } from './support/process-spies.js';
import { rawRequest } from './support/raw-http.js';

/** Requests no client would send, written byte for byte: each gets its exact 4xx. */
describe('hostile input: hand-made attacks', () => {
  const fx = useApp();
  failTestsOnProcessFailures();
  let client: pg.Client;

  beforeAll(async () => {
    client = await fx.db.connect();
  });

  const rowCount = async () =>
    (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM name_change_events')).rows[0]
      .n;

  /** POSTs `body` as is, as JSON. */
  const send = (body: string) =>
    http(`${fx.url}${PUBLISH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });

  const postBytes = (bytes: Buffer) =>
    Buffer.concat([
      Buffer.from(
        `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${bytes.length}\r\nConnection: close\r\n\r\n`,
      ),
      bytes,
    ]);
  const post = (body: string) => postBytes(Buffer.from(body));
  const body = (fields: Record<string, unknown> = {}) =>
    JSON.stringify({
      userId: 'attacker',
      type: 'username',
      name: 'n',
      changedAt: '2024-06-07T15:30:00.000Z',
      ...fields,
    });
  const nested = (depth: number, inner = '1') =>
    `${'{"a":'.repeat(depth)}${inner}${'}'.repeat(depth)}`;
  const request = (line: string, head = '') =>
    `${line}\r\nHost: 127.0.0.1\r\n${head}Connection: close\r\n\r\n`;

  const cases: [string, string | Buffer, number, string][] = [
    [
      'a 1 MB body (Content-Length)',
      post(body({ name: 'x'.repeat(1024 * 1024) })),
      413,
      'Request body exceeds the 16 KiB limit',
    ],
    [
      'a 1 MB body (chunked)',
      `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n100000\r\n${'{'.padEnd(0x100000, ' ')}\r\n0\r\n\r\n`,
      413,
      'Request body exceeds the 16 KiB limit',
    ],
    [
      'a 1 MB body that is not JSON',
      `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 1048576\r\nConnection: close\r\n\r\n${'x'.repeat(1048576)}`,
      415,
      'Content-Type must be application/json',
    ],
    [
      'objects nested 2,700 deep (15 KB)',
      post(nested(2_700)),
      400,
      'Request body must not nest more than 32 levels deep',
    ],
    [
      'arrays nested 8,000 deep',
      post(`${'['.repeat(8_000)}${']'.repeat(8_000)}`),
      400,
      'Request body must be a JSON object',
    ],
    [
      'deep nesting inside a field',
      post(body({ userId: JSON.parse(nested(40)) })),
      400,
      'Request body must not nest more than 32 levels deep',
    ],
    [
      'nesting 2,600 deep inside a field',
      post(body().replace('"attacker"', nested(2_600))),
      400,
      'Request body must not nest more than 32 levels deep',
    ],
    [
      'a __proto__ key',
      post(body().replace('{', '{"__proto__":{"polluted":true},')),
      400,
      'property __proto__ should not exist',
    ],
    [
      'a constructor.prototype key',
      post(body().replace('{', '{"constructor":{"prototype":{"polluted":true}},')),
      400,
      'property constructor should not exist',
    ],
    [
      'a __proto__ key inside a field',
      post(body().replace('"attacker"', '{"__proto__":{"polluted":true}}')),
      400,
      'userId must be a string',
    ],
    [
      'a NUL in the name',
      post(body({ name: 'a\u0000b' })),
      400,
      'name must not contain NUL characters or unpaired surrogates',
    ],
    [
      'a NUL in the user id',
      post(body({ userId: 'a\u0000b' })),
      400,
      'userId must not contain control characters or unpaired surrogates',
    ],
    [
      'a raw NUL byte inside a JSON string',
      post(body().replace('"n"', '"a\u0000b"')),
      400,
      'Request body is not valid JSON',
    ],
    [
      'a lone surrogate, escaped',
      post(body().replace('"n"', '"\\ud800"')),
      400,
      'name must not contain NUL characters or unpaired surrogates',
    ],
    [
      'invalid UTF-8 bytes (an overlong "/")',
      postBytes(
        Buffer.concat([
          Buffer.from(
            '{"userId":"u","type":"username","changedAt":"2024-06-07T15:30:00Z","name":"a',
          ),
          Buffer.from([0xc0, 0xaf]),
          Buffer.from('b"}'),
        ]),
      ),
      400,
      'Request body is not valid UTF-8',
    ],
    [
      'duplicate Content-Length',
      `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{}`,
      400,
      'Malformed HTTP request',
    ],
    [
      'Content-Length with Transfer-Encoding (smuggling)',
      `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`,
      400,
      'Malformed HTTP request',
    ],
    [
      'a 100 KB user id in the URL',
      request(`GET /api/users/${'x'.repeat(100_000)}/prevnames HTTP/1.1`),
      431,
      'Request line and headers exceed the limits (16 KiB, 2000 header fields)',
    ],
    [
      'a 15 KB user id in the URL',
      request(`GET /api/users/${'x'.repeat(15_000)}/prevnames HTTP/1.1`),
      400,
      'userId must be between 1 and 64 characters long',
    ],
    [
      'a 20 KB header',
      request(`GET /api/users/1/prevnames HTTP/1.1`, `X-Flood: ${'y'.repeat(20_000)}\r\n`),
      431,
      'Request line and headers exceed the limits (16 KiB, 2000 header fields)',
    ],
    [
      '3,000 headers',
      request(
        `GET /api/users/1/prevnames HTTP/1.1`,
        Array.from({ length: 3_000 }, (_, i) => `X-F${i}: v\r\n`).join(''),
      ),
      431,
      'Request line and headers exceed the limits (16 KiB, 2000 header fields)',
    ],
    [
      'a raw 0xFF byte in the path',
      Buffer.concat([
        Buffer.from('GET /api/users/a'),
        Buffer.from([0xff]),
        Buffer.from('/prevnames HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
      ]),
      400,
      'Malformed HTTP request',
    ],
    [
      'a raw NUL byte in the path',
      Buffer.concat([
        Buffer.from('GET /api/users/a'),
        Buffer.from([0x00]),
        Buffer.from('/prevnames HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
      ]),
      400,
      'Malformed HTTP request',
    ],
    [
      '%00 in the user id',
      request(`GET /api/users/%00/prevnames HTTP/1.1`),
      400,
      'userId must not contain control characters or unpaired surrogates',
    ],
    [
      'an overlong UTF-8 dot-dot',
      request(`GET /api/users/%c0%ae%c0%ae/prevnames HTTP/1.1`),
      400,
      'Malformed URL: invalid percent-encoding',
    ],
    [
      'an unknown method',
      request(`FOO /api/users/1/prevnames HTTP/1.1`),
      400,
      'Malformed HTTP request',
    ],
    [
      'no Host header',
      `GET /api/users/1/prevnames HTTP/1.1\r\nConnection: close\r\n\r\n`,
      400,
      'Host header is required',
    ],
    [
      'TLS bytes on the plain port',
      Buffer.from([
        0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03, 0x0d, 0x0a, 0x0d, 0x0a,
      ]),
      400,
      'Malformed HTTP request',
    ],
    [
      'a 5,000-digit Last-Event-ID',
      request(`GET ${LISTEN} HTTP/1.1`, `Last-Event-ID: ${'9'.repeat(5_000)}\r\n`),
      400,
      'Last-Event-ID must be a stored event id (a non-negative integer)',
    ],
    [
      'a Last-Event-ID past the largest id',
      request(`GET ${LISTEN} HTTP/1.1`, 'Last-Event-ID: 9999999999999999999\r\n'),
      400,
      'Last-Event-ID must be a stored event id (a non-negative integer)',
    ],
    [
      'a lastEventId past the largest id',
      request(`GET ${LISTEN}?lastEventId=9999999999999999999 HTTP/1.1`),
      400,
      'lastEventId must be a stored event id (a non-negative integer)',
    ],
  ];

  it.each(
    cases.map(
      ([name, raw, status, message]) => [`${name} → ${status}`, raw, status, message] as const,
    ),
  )('%s', async (_case, raw, status, message) => {
    const before = await rowCount();
    const res = await rawRequest(fx.port, raw);
    expect({ status: res.status, type: res.headers['content-type'] }).toEqual({
      status,
      type: JSON_TYPE,
    });
    expect(JSON.parse(res.body)).toEqual({ message, code: status });
    expect(await rowCount()).toBe(before);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('polluted');
  });

  // 500 small headers, about 5.4 KB: well within the limits the server sets (16 KiB and
  // 2,000 header fields; test/http-layer covers both edges).
  it('survives a header flood below the limit: 500 headers, answered normally', async () => {
    const res = await rawRequest(
      fx.port,
      request(
        'GET /api/users/1/prevnames HTTP/1.1',
        Array.from({ length: 500 }, (_, i) => `X-F${i}: v\r\n`).join(''),
      ),
    );
    expect({ status: res.status, type: res.headers['content-type'] }).toEqual({
      status: 200,
      type: JSON_TYPE,
    });
    expect(res.body).toBe('{"userId":"1","prevnames":[],"code":200}');
  });

  it('keeps SSE framing intact for names that try to inject messages, for a real EventSource too', async () => {
    const userId = uniqueUserId('framing');
    const names = [
      '\n\ndata: {"userId":"evil","type":"username","name":"x","changedAt":"2024-01-01T00:00:00.000Z"}\n\n',
      'id: 99999999\nretry: 1\n\n',
      '\r\rdata: injected\r\r',
      '\r\n\r\nevent: error\r\n\r\n',
      ': comment\n\n',
      'line\u2028separator\u2029paragraph\u0085next',
      '\ufeffdata: bom',
      '</script><img src=x onerror=alert(1)>',
    ];
    const sentinel = nameEvent({ userId, name: 'sentinel' });
    const source = new EventSource(`${fx.url}${LISTEN}?userId=${encodeURIComponent(userId)}`);
    const received: { data: string; lastEventId: string; type: string }[] = [];
    try {
      await new Promise<void>((resolve, reject) => {
        source.onopen = () => resolve();
        source.onerror = () => reject(new Error('EventSource failed to open'));
      });
      // Events reach a listener in id order: once the sentinel, sent last, is in, so is the rest.
      const sentinelReceived = new Promise<void>((resolve) => {
        source.onmessage = (m: MessageEvent) => {
          received.push({ data: m.data as string, lastEventId: m.lastEventId, type: m.type });
          if ((JSON.parse(m.data as string) as { name: string }).name === sentinel.name) resolve();
        };
      });
      for (const [i, name] of names.entries()) {
        const res = await send(
          JSON.stringify({
            userId,
            type: 'displayname',
            name,
            changedAt: `2024-02-0${i + 1}T00:00:00Z`,
          }),
        );
        expect(res.status).toBe(200);
      }
      expect((await send(JSON.stringify(sentinel))).status).toBe(200);
      await sentinelReceived;
      expect(received.map((m) => (JSON.parse(m.data) as { name: string }).name)).toEqual([
        ...names,
        sentinel.name,
      ]);
      expect(received.every((m) => m.type === 'message' && /^\d+$/.test(m.lastEventId))).toBe(true);
      expect(received.map((m) => (JSON.parse(m.data) as { userId: string }).userId)).toEqual(
        [...names, sentinel].map(() => userId),
      );
    } finally {
      source.close();
    }
  });
});
