import { PUBLISH } from './support/api.js';
import { useApp } from './support/app.js';
import { answer, head, HISTORY, nodeRefusal } from './support/http-answers.js';
import { parseResponse, rawExchange } from './support/raw-http.js';

const event = JSON.stringify({
  userId: 'http-layer',
  type: 'username',
  name: 'continued',
  changedAt: '2024-06-07T15:30:00.000Z',
});

/** `Expect` on the HTTP layer: Node's bodiless 417, and `100 Continue` only for a body wanted. */
describe('answers of the HTTP layer: Expect', () => {
  // Short timeouts, so that the 408s come quickly; the defaults are 10 s and 30 s.
  const fx = useApp({ env: { HTTP_HEADERS_TIMEOUT_MS: '500', HTTP_REQUEST_TIMEOUT_MS: '1000' } });

  const rowCount = async () =>
    (await fx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM name_change_events'))[0].n;

  it.each(['foo', '200-ok', '100-continuing', ''])(
    'answers Expect: %j with Node’s own 417, without a body',
    async (expectation) => {
      const raw = await rawExchange(fx.port, [
        {
          send: head(
            `GET ${HISTORY} HTTP/1.1`,
            `Expect: ${expectation}\r\nConnection: close\r\n\r\n`,
          ),
        },
      ]);
      expect(answer(raw)).toEqual({
        status: 417,
        headers: { connection: 'close', 'transfer-encoding': 'chunked' },
        body: '',
      });
    },
  );

  it('sends 100 Continue for a body it wants, then the real answer', async () => {
    const listener = await fx.listen();
    try {
      const raw = await rawExchange(fx.port, [
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
      const raw = await rawExchange(fx.port, [
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
    const raw = await rawExchange(fx.port, [
      {
        send: head(
          `POST ${PUBLISH} HTTP/1.1`,
          `Content-Type: application/json\r\nContent-Length: ${event.length}\r\nExpect: 100-continue\r\n\r\n`,
        ),
      },
    ]);
    expect(raw).toBe(`HTTP/1.1 100 Continue\r\n\r\n${nodeRefusal(408)}`);
  });
});
