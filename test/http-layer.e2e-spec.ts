import { STATUS_CODES } from 'node:http';
import type { AddressInfo } from 'node:net';
import { redisEnv, startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { parseResponse, rawExchange, rawRequest } from './support/raw-http.js';
import { SseStream } from './support/sse.js';

const PUBLISH = '/api/webhooks/prevnames';
const HISTORY = '/api/users/1/prevnames';
const HEAD_TOO_LARGE = 'Request line and headers exceed the limits (16 KiB, 2000 header fields)';
const VERSION = 'HTTP version not supported: use HTTP/1.1';
const TIMED_OUT = 'Request timed out';

/** The exact bytes of an answer written on a connection that then closes. */
function closingAnswer(code: number, message: string): string {
  const body = JSON.stringify({ message, code });
  return (
    `HTTP/1.1 ${code} ${STATUS_CODES[code]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/** An answer's status line, headers (but Date) and body, to compare with toEqual. */
function answer(raw: string) {
  const { status, headers, body } = parseResponse(Buffer.from(raw, 'latin1'));
  const { date: _date, ...rest } = headers;
  return { status, headers: rest, body };
}

function jsonAnswer(code: number, message: string, extra: Record<string, string> = {}) {
  const body = JSON.stringify({ message, code });
  return {
    status: code,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
      ...extra,
    },
    body,
  };
}

const head = (line: string, headers = '') => `${line}\r\nHost: 127.0.0.1\r\n${headers}`;
const event = JSON.stringify({
  userId: 'http-layer',
  type: 'username',
  name: 'continued',
  changedAt: '2024-06-07T15:30:00.000Z',
});

/**
 * Every answer Node's HTTP layer would give by itself (bare statuses, empty bodies, or a
 * closed connection) carries the error contract's body, with `code` equal to the status.
 */
describe('answers of the HTTP layer', () => {
  let db: TestDatabase;
  let app: TestApp;
  let port: number;

  beforeAll(async () => {
    db = await TestDatabase.create();
    // Short timeouts, so that the 408s come quickly; the defaults are 10 s and 30 s.
    app = await startApp({
      ...redisEnv(db.url),
      HTTP_HEADERS_TIMEOUT_MS: '500',
      HTTP_REQUEST_TIMEOUT_MS: '1000',
    });
    port = (app.app.getHttpServer().address() as AddressInfo).port;
  });

  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  const rowCount = async () =>
    (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM name_change_events'))[0].n;

  describe('Expect', () => {
    it.each(['foo', '200-ok', '100-continuing', ''])(
      'answers Expect: %j with a 417 and the error body',
      async (expectation) => {
        const raw = await rawExchange(port, [
          { send: head(`GET ${HISTORY} HTTP/1.1`, `Expect: ${expectation}\r\n\r\n`) },
        ]);
        expect(answer(raw)).toEqual(
          jsonAnswer(
            417,
            'Expectation not supported: the only Expect this service accepts is 100-continue',
            { connection: 'close' },
          ),
        );
      },
    );

    it('sends 100 Continue for a body it wants, then the real answer', async () => {
      const listener = await SseStream.open(`${app.url}/api/webhooks/prevnames/listen`);
      try {
        const raw = await rawExchange(port, [
          {
            send: head(
              `POST ${PUBLISH} HTTP/1.1`,
              `Content-Type: application/json\r\nContent-Length: ${event.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
            ),
          },
          { send: event, when: (received) => received.includes('\r\n\r\n') },
        ]);
        expect(raw.startsWith('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n')).toBe(true);
        const final = parseResponse(Buffer.from(raw.slice(raw.indexOf('HTTP/1.1 200')), 'latin1'));
        expect(JSON.parse(final.body)).toEqual({ success: true });
        await listener.untilEvents(1);
        expect(listener.events[0].data).toEqual(JSON.parse(event));
      } finally {
        listener.close();
      }
    });

    it.each([
      [
        'a body that is not JSON',
        'text/plain',
        String(event.length),
        415,
        'Content-Type must be application/json',
      ],
      [
        'a body in UTF-16',
        'application/json; charset=utf-16',
        String(event.length * 2),
        415,
        'Unsupported charset: request bodies must be UTF-8 JSON',
      ],
      [
        'a body over 16 KiB',
        'application/json',
        '20000',
        413,
        'Request body exceeds the 16 KiB limit',
      ],
    ])(
      'refuses %s on its headers alone: no 100 Continue, the answer at once, the connection closed',
      async (_case, type, length, code, message) => {
        const before = await rowCount();
        const raw = await rawExchange(port, [
          {
            send: head(
              `POST ${PUBLISH} HTTP/1.1`,
              `Content-Type: ${type}\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`,
            ),
          },
        ]);
        expect(raw.startsWith(`HTTP/1.1 ${code} `)).toBe(true);
        const { status, headers, body } = answer(raw);
        expect({ status, body }).toEqual({ status: code, body: JSON.stringify({ message, code }) });
        expect(headers).toMatchObject({
          'content-type': 'application/json; charset=utf-8',
          connection: 'close',
        });
        expect(await rowCount()).toBe(before);
      },
    );

    it('answers 408 when the body it asked for with 100 Continue never comes', async () => {
      const raw = await rawExchange(port, [
        {
          send: head(
            `POST ${PUBLISH} HTTP/1.1`,
            `Content-Type: application/json\r\nContent-Length: ${event.length}\r\nExpect: 100-continue\r\n\r\n`,
          ),
        },
      ]);
      expect(raw).toBe(`HTTP/1.1 100 Continue\r\n\r\n${closingAnswer(408, TIMED_OUT)}`);
    });
  });

  describe('timeouts', () => {
    it('answers 408 to a head that never ends', async () => {
      const raw = await rawExchange(port, [{ send: head(`GET ${HISTORY} HTTP/1.1`) }]);
      expect(raw).toBe(closingAnswer(408, TIMED_OUT));
    });

    it('answers 408 to a body that never ends', async () => {
      const before = await rowCount();
      const raw = await rawExchange(port, [
        {
          send: head(
            `POST ${PUBLISH} HTTP/1.1`,
            `Content-Type: application/json\r\nContent-Length: ${event.length}\r\n\r\n${event.slice(0, 10)}`,
          ),
        },
      ]);
      expect(raw).toBe(closingAnswer(408, TIMED_OUT));
      expect(await rowCount()).toBe(before);
    });

    it('answers 408 to the second request of a kept-alive connection, after the first answer', async () => {
      const raw = await rawExchange(port, [
        { send: head(`GET ${HISTORY} HTTP/1.1`, '\r\n') + head(`GET ${HISTORY} HTTP/1.1`) },
      ]);
      const second = raw.indexOf('HTTP/1.1 408');
      expect(answer(raw.slice(0, second))).toMatchObject({
        status: 200,
        body: '{"userId":"1","prevnames":[],"code":200}',
      });
      expect(raw.slice(second)).toBe(closingAnswer(408, TIMED_OUT));
    });
  });

  describe('malformed requests', () => {
    it('answers a malformed request that follows a good one after the good one’s answer', async () => {
      const raw = await rawExchange(port, [
        {
          send:
            head(`GET ${HISTORY} HTTP/1.1`, '\r\n') +
            head(`GET ${HISTORY} HTTP/1.1`, 'Content-Length: 1\r\nContent-Length: 2\r\n\r\n'),
        },
      ]);
      const second = raw.indexOf('HTTP/1.1 400');
      expect(answer(raw.slice(0, second))).toMatchObject({
        status: 200,
        body: '{"userId":"1","prevnames":[],"code":200}',
      });
      expect(raw.slice(second)).toBe(closingAnswer(400, 'Malformed HTTP request'));
    });

    it('answers a CONNECT (this is no proxy) instead of closing the connection', async () => {
      const raw = await rawExchange(port, [
        { send: 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n' },
      ]);
      expect(raw).toBe(closingAnswer(404, 'Cannot CONNECT example.com:443'));
    });
  });

  describe('HTTP versions', () => {
    it.each(['HTTP/1.2', 'HTTP/3.0', 'HTTP/9.9'])(
      'answers a request line with %s (refused by the parser) with a 505',
      async (version) => {
        const raw = await rawExchange(port, [
          { send: head(`GET ${HISTORY} ${version}`, 'Connection: close\r\n\r\n') },
        ]);
        expect(raw).toBe(closingAnswer(505, VERSION));
      },
    );

    it.each(['HTTP/2.0', 'HTTP/0.9'])(
      'answers a request line with %s (which the parser lets through) with a 505',
      async (version) => {
        const raw = await rawExchange(port, [{ send: head(`GET ${HISTORY} ${version}`, '\r\n') }]);
        expect(answer(raw)).toEqual(jsonAnswer(505, VERSION, { connection: 'close' }));
      },
    );

    it('answers the HTTP/2 connection preface (HTTP/2 without TLS) with a 505', async () => {
      const raw = await rawExchange(port, [{ send: 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' }]);
      expect(raw).toBe(closingAnswer(505, VERSION));
    });

    it('still answers HTTP/1.0', async () => {
      const res = await rawRequest(port, `GET ${HISTORY} HTTP/1.0\r\n\r\n`);
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ userId: '1', prevnames: [], code: 200 });
    });
  });

  describe('limits of a request head: 16 KiB and 2000 header fields, set explicitly', () => {
    /** A request with `count` header fields in all (Host and Connection included). */
    const withFields = (count: number) =>
      head(
        `GET ${HISTORY} HTTP/1.1`,
        Array.from({ length: count - 2 }, (_, i) => `X-F${i}: v\r\n`).join('') +
          'Connection: close\r\n\r\n',
      );

    it('answers a request with 2000 header fields normally', async () => {
      const res = await rawRequest(port, withFields(2000));
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ userId: '1', prevnames: [], code: 200 });
    });

    it('answers 431 to 2001 header fields, whatever their size', async () => {
      const res = await rawRequest(port, withFields(2001));
      expect(res.raw.toString('latin1')).toBe(closingAnswer(431, HEAD_TOO_LARGE));
    });

    it('answers a head of just under 16 KiB normally, and 431 past it', async () => {
      // Node counts the URL and each header's name and value against the limit.
      const counted = HISTORY.length + 'Host127.0.0.1X-FConnectionclose'.length;
      const filler = 16 * 1024 - counted - 64;
      const fits = await rawRequest(
        port,
        head(`GET ${HISTORY} HTTP/1.1`, `X-F: ${'y'.repeat(filler)}\r\nConnection: close\r\n\r\n`),
      );
      expect(fits.status).toBe(200);
      const over = await rawRequest(
        port,
        head(
          `GET ${HISTORY} HTTP/1.1`,
          `X-F: ${'y'.repeat(filler + 128)}\r\nConnection: close\r\n\r\n`,
        ),
      );
      expect(over.raw.toString('latin1')).toBe(closingAnswer(431, HEAD_TOO_LARGE));
    });

    it('answers 431 to a URL past the limit', async () => {
      const res = await rawRequest(
        port,
        head(
          `GET /api/users/${'x'.repeat(17_000)}/prevnames HTTP/1.1`,
          'Connection: close\r\n\r\n',
        ),
      );
      expect(res.raw.toString('latin1')).toBe(closingAnswer(431, HEAD_TOO_LARGE));
    });
  });
});
