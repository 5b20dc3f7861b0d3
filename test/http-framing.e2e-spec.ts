import { historyPath, PUBLISH } from './support/api.js';
import { useApp } from './support/app.js';
import { historyEntry, nameEvent, streamed } from './support/events.js';
import { answer, jsonAnswer, nodeRefusal } from './support/http-answers.js';
import { failTestsOnProcessFailures } from './support/process-spies.js';
import { rawExchange } from './support/raw-http.js';

const MULTIPLE_HOSTS = 'Multiple Host headers';
const TOO_LARGE = 'Request body exceeds the 16 KiB limit';
const LIMIT = 16 * 1024;

/** Every status line in what a connection received: how many answers it got. */
const statusLines = (raw: string) => raw.match(/^HTTP\/1\.1 \d{3} .*$/gm) ?? [];

/**
 * How a request is framed: one Host (RFC 9112, section 3.2) and a body announced within the
 * limit. Each request here goes alone on a connection of its own, written byte for byte, and
 * each answer is read until the server closes that connection.
 */
describe('answers of the HTTP layer: Host and Content-Length', () => {
  // The default timeouts (10 s for the head, 30 s for the whole request): longer than
  // rawExchange waits (15 s), so an answer that waited for a body never sent fails the test.
  const fx = useApp();
  failTestsOnProcessFailures();

  const rowCount = async () =>
    (await fx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM name_change_events'))[0].n;

  describe('more than one Host', () => {
    it.each([
      ['the same value twice', 'Host: 127.0.0.1\r\nHost: 127.0.0.1\r\n'],
      ['two values', 'Host: 127.0.0.1\r\nHost: evil.example\r\n'],
      ['host and HOST', 'host: 127.0.0.1\r\nHOST: 127.0.0.1\r\n'],
      ['Host, then hOsT apart from it', 'Host: 127.0.0.1\r\nAccept: */*\r\nhOsT: 127.0.0.1\r\n'],
      ['an empty Host and another', 'Host:\r\nHost: 127.0.0.1\r\n'],
      ['three', 'Host: a\r\nHost: b\r\nHost: c\r\n'],
    ])('refuses a GET with %s: 400, the connection closed', async (_case, hosts) => {
      const raw = await rawExchange(fx.port, [
        { send: `GET ${historyPath('1')} HTTP/1.1\r\n${hosts}\r\n` },
      ]);
      expect(raw.startsWith('HTTP/1.1 400 Bad Request\r\n')).toBe(true);
      expect(statusLines(raw)).toHaveLength(1);
      expect(answer(raw)).toEqual(jsonAnswer(400, MULTIPLE_HOSTS, { connection: 'close' }));
    });

    it('refuses two Hosts on HTTP/1.0 too (RFC 9112 says any request)', async () => {
      const raw = await rawExchange(fx.port, [
        { send: `GET ${historyPath('1')} HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n` },
      ]);
      expect(answer(raw)).toEqual(jsonAnswer(400, MULTIPLE_HOSTS, { connection: 'close' }));
    });

    it('refuses a valid publish with two Hosts: nothing stored, nothing broadcast', async () => {
      const event = nameEvent();
      const listener = await fx.listen();
      expect(listener.status).toBe(200);
      const before = await rowCount();
      const body = JSON.stringify(event);
      const raw = await rawExchange(fx.port, [
        {
          send:
            `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${body.length}\r\nhost: evil.example\r\n\r\n${body}`,
        },
      ]);
      expect(raw.startsWith('HTTP/1.1 400 Bad Request\r\n')).toBe(true);
      expect(statusLines(raw)).toHaveLength(1);
      expect(answer(raw)).toEqual(jsonAnswer(400, MULTIPLE_HOSTS, { connection: 'close' }));
      expect(await rowCount()).toBe(before);
      expect((await fx.history(event.userId)).body.prevnames).toEqual([]);
      // The listener's events, up to a sentinel published after the refusal: only the sentinel.
      const sentinel = await fx.sentinel([listener]);
      expect(listener.events.map((e) => e.data)).toEqual([sentinel.data]);
    });

    it('answers a single Host as usual', async () => {
      const raw = await rawExchange(fx.port, [
        {
          send: `GET ${historyPath('1')} HTTP/1.1\r\nHOST: 127.0.0.1\r\nConnection: close\r\n\r\n`,
        },
      ]);
      expect(raw.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
      const { status, body } = answer(raw);
      expect({ status, body }).toEqual({
        status: 200,
        body: '{"userId":"1","prevnames":[],"code":200}',
      });
    });
  });

  describe('a body announced over 16 KiB', () => {
    it.each([
      ['16385 bytes', 'POST', PUBLISH, '16385', ''],
      ['10 MB', 'POST', PUBLISH, '10000000', ''],
      ['10 MB, with Expect: 100-continue', 'POST', PUBLISH, '10000000', 'Expect: 100-continue\r\n'],
      ['10 MB on a GET of a history', 'GET', historyPath('1'), '10000000', ''],
      ['16385 bytes, with leading zeros', 'POST', PUBLISH, '00016385', ''],
      ['the largest Content-Length Node takes', 'POST', PUBLISH, '18446744073709551615', ''],
    ])(
      'refuses %s on its headers alone: 413 with the body never sent, the connection closed',
      async (_case, method, path, length, extra) => {
        const before = await rowCount();
        // The headers, and nothing more: the answer, and the end of the connection, come
        // while the client has not sent a byte of the body it announced.
        const raw = await rawExchange(fx.port, [
          {
            send:
              `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
              `Content-Length: ${length}\r\n${extra}\r\n`,
          },
        ]);
        expect(raw.startsWith('HTTP/1.1 413 Payload Too Large\r\n')).toBe(true);
        expect(statusLines(raw)).toHaveLength(1);
        const { status, headers, body } = answer(raw);
        expect({ status, body }).toEqual({
          status: 413,
          body: JSON.stringify({ message: TOO_LARGE, code: 413 }),
        });
        expect(headers).toMatchObject({
          'content-type': 'application/json; charset=utf-8',
          'content-length': String(Buffer.byteLength(body)),
          connection: 'close',
        });
        expect(headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
        expect(await rowCount()).toBe(before);
      },
    );

    it.each([
      ['without Expect', false],
      ['with Expect: 100-continue', true],
    ])('accepts a valid body of exactly 16384 bytes %s', async (_case, expectContinue) => {
      const event = nameEvent();
      const listener = await fx.listen(`?userId=${encodeURIComponent(event.userId)}`);
      expect(listener.status).toBe(200);
      // Whitespace after the JSON text is still JSON.
      const body = JSON.stringify(event).padEnd(LIMIT, ' ');
      expect(Buffer.byteLength(body)).toBe(LIMIT);
      const headers =
        `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${LIMIT}\r\nConnection: close\r\n` +
        `${expectContinue ? 'Expect: 100-continue\r\n' : ''}\r\n`;
      const raw = await rawExchange(
        fx.port,
        expectContinue
          ? [{ send: headers }, { send: body, when: (received) => received.includes('\r\n\r\n') }]
          : [{ send: headers + body }],
      );
      const final = expectContinue ? raw.slice('HTTP/1.1 100 Continue\r\n\r\n'.length) : raw;
      if (expectContinue) expect(raw.startsWith('HTTP/1.1 100 Continue\r\n\r\n')).toBe(true);
      expect(final.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
      expect(answer(final).body).toBe('{"success":true}');
      await listener.untilEvents(1);
      expect(listener.events.map((e) => e.data)).toEqual([streamed(event)]);
      expect((await fx.history(event.userId)).body.prevnames).toEqual([historyEntry(event)]);
    });
  });

  // Node's parser refuses these itself (HPE_INVALID_CONTENT_LENGTH, HPE_UNEXPECTED_CONTENT_LENGTH,
  // HPE_INVALID_TRANSFER_ENCODING): Node's own answer, a bare 400, on the connection it closes.
  describe('a Content-Length that is not one number', () => {
    it.each([
      ['letters', 'Content-Length: abc\r\n'],
      ['a list of values', 'Content-Length: 5, 5\r\n'],
      ['two lines of the same value', 'Content-Length: 5\r\nContent-Length: 5\r\n'],
      ['two lines of different values', 'Content-Length: 5\r\nContent-Length: 20000\r\n'],
      ['a sign', 'Content-Length: +5\r\n'],
      ['a negative length', 'Content-Length: -1\r\n'],
      ['an exponent', 'Content-Length: 1e5\r\n'],
      ['hexadecimal', 'Content-Length: 0x4001\r\n'],
      ['a fraction', 'Content-Length: 5.0\r\n'],
      ['digits with a space inside', 'Content-Length: 16 385\r\n'],
      ['an empty value', 'Content-Length:\r\n'],
      ['past 2^64 - 1', 'Content-Length: 18446744073709551616\r\n'],
      ['beside Transfer-Encoding', 'Content-Length: 5\r\nTransfer-Encoding: chunked\r\n'],
    ])('is refused by Node with %s: Node’s bare 400', async (_case, lengths) => {
      const before = await rowCount();
      const raw = await rawExchange(fx.port, [
        {
          send:
            `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
            `${lengths}\r\n{"a":1}`,
        },
      ]);
      expect(raw).toBe(nodeRefusal(400));
      expect(await rowCount()).toBe(before);
    });
  });
});
