import { useApp } from './support/app.js';
import {
  answer,
  closingAnswer,
  head,
  HISTORY,
  jsonAnswer,
  MALFORMED,
  nodeRefusal,
  VERSION,
} from './support/http-answers.js';
import { failTestsOnProcessFailures } from './support/process-spies.js';
import { rawExchange, rawRequest } from './support/raw-http.js';

const GOOD_ANSWER = '{"userId":"1","prevnames":[],"code":200}';

/**
 * RFC 9110 keeps 505 for a well-formed request naming a major version the server does not
 * support; everything else malformed in a request line is a 400. What Node's parser refuses
 * (HPE_INVALID_VERSION and the like) gets Node's own answer, a bare 400 that closes the
 * connection; what it lets through (HTTP/2.0, HTTP/0.9) reaches the application, which
 * answers with the error contract's body. Every case here is answered in full, byte for
 * byte. (Generated request lines: hostile-request-lines.)
 */
describe('answers of the HTTP layer: request lines and versions', () => {
  const fx = useApp();
  failTestsOnProcessFailures();

  const send = (bytes: string) => rawExchange(fx.port, [{ send: bytes }]);

  describe('505: a well-formed request line naming HTTP/2.0, which the parser lets through', () => {
    it('answers a request line with HTTP/2.0 with a 505 and the error body', async () => {
      const raw = await send(head(`GET ${HISTORY} HTTP/2.0`, '\r\n'));
      expect(answer(raw)).toEqual(jsonAnswer(505, VERSION, { connection: 'close' }));
    });

    it('answers HTTP/2.0 on a kept-alive connection after the answer before it', async () => {
      const raw = await send(
        head(`GET ${HISTORY} HTTP/1.1`, '\r\n') + head(`POST /api/x HTTP/2.0`, '\r\n'),
      );
      const second = raw.indexOf('HTTP/1.1 505');
      expect(answer(raw.slice(0, second))).toMatchObject({ status: 200, body: GOOD_ANSWER });
      expect(answer(raw.slice(second))).toEqual(jsonAnswer(505, VERSION, { connection: 'close' }));
    });
  });

  describe("Node's own 400: a version its parser refuses", () => {
    it.each(['HTTP/3.0', 'HTTP/9.9', 'HTTP/2.1'])(
      'answers a request line with %s with Node’s bare 400',
      async (version) => {
        const raw = await send(head(`GET ${HISTORY} ${version}`, 'Connection: close\r\n\r\n'));
        expect(raw).toBe(nodeRefusal(400));
      },
    );

    it('answers the HTTP/2 connection preface (HTTP/2 without TLS) with Node’s bare 400', async () => {
      const raw = await send('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
      expect(raw).toBe(nodeRefusal(400));
    });

    it('answers HTTP/9.9 on a kept-alive connection with Node’s bare 400 alone: Node drops the answer in progress', async () => {
      const raw = await send(
        head(`GET ${HISTORY} HTTP/1.1`, '\r\n') + head(`POST /api/x HTTP/9.9`, '\r\n'),
      );
      expect(raw).toBe(nodeRefusal(400));
    });
  });

  describe('400: every other malformed request line', () => {
    it.each([
      ['a bare LF ending the request line', `GET ${HISTORY} HTTP/1.1\nHost: 127.0.0.1\n\n`],
      ['a bare LF after HTTP/2.0', `GET ${HISTORY} HTTP/2.0\nHost: 127.0.0.1\n\n`],
      ['a bare LF after HTTP/9.9', `GET ${HISTORY} HTTP/9.9\nHost: 127.0.0.1\r\n\r\n`],
      ['HTTP/1.x', head(`GET ${HISTORY} HTTP/1.x`, '\r\n')],
      ['HTTP/01.1', head(`GET ${HISTORY} HTTP/01.1`, '\r\n')],
      ['HTTQ/1.1', head(`GET ${HISTORY} HTTQ/1.1`, '\r\n')],
      ['http/2.0 (lower case)', head(`GET ${HISTORY} http/2.0`, '\r\n')],
      ['HTTP/2 (no minor version)', head(`GET ${HISTORY} HTTP/2`, '\r\n')],
      ['HTTP/10.0 (two digits)', head(`GET ${HISTORY} HTTP/10.0`, '\r\n')],
      ['HTTP/1.2 (major 1, a minor the parser refuses)', head(`GET ${HISTORY} HTTP/1.2`, '\r\n')],
      ['HTTP/0.8', head(`GET ${HISTORY} HTTP/0.8`, '\r\n')],
      ['a space after the version', head(`GET ${HISTORY} HTTP/2.0 `, '\r\n')],
      ['no version after the target', head(`GET ${HISTORY} `, '\r\n')],
      ['a method alone', 'GET\r\n\r\n'],
      ['the HTTP/2 preface with bare LFs', 'PRI * HTTP/2.0\n\n'],
    ])('answers %s (refused by the parser) with Node’s bare 400', async (_case, request) => {
      expect(await send(request)).toBe(nodeRefusal(400));
    });

    it.each([
      ['an HTTP/0.9 request line (no version)', `GET ${HISTORY}\r\n\r\n`],
      ['a request line naming HTTP/0.9', head(`GET ${HISTORY} HTTP/0.9`, '\r\n')],
    ])('answers %s (which the parser lets through) with a 400', async (_case, request) => {
      expect(answer(await send(request))).toEqual(
        jsonAnswer(400, MALFORMED, { connection: 'close' }),
      );
    });

    // Node's parser reads ahead on a kept-alive connection: a request it refuses behind one
    // still being answered gets its bare 400 at once, and the connection closes without the
    // answer in progress (the contract's exception for what Node answers by itself).
    it.each([
      [
        'conflicting lengths',
        head(`GET ${HISTORY} HTTP/1.1`, 'Content-Length: 1\r\nContent-Length: 2\r\n\r\n'),
      ],
      ['a bare LF after the request line', `GET ${HISTORY} HTTP/2.0\nHost: 127.0.0.1\n\n`],
    ])(
      'answers a request with %s behind a good one with Node’s bare 400 alone',
      async (_case, bad) => {
        const raw = await send(head(`GET ${HISTORY} HTTP/1.1`, '\r\n') + bad);
        expect(raw).toBe(nodeRefusal(400));
      },
    );
  });

  it('answers a CONNECT (this is no proxy) instead of closing the connection', async () => {
    const raw = await send('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(raw).toBe(closingAnswer(404, 'Cannot CONNECT example.com:443'));
  });

  it('still answers HTTP/1.0', async () => {
    const res = await rawRequest(fx.port, `GET ${HISTORY} HTTP/1.0\r\n\r\n`);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ userId: '1', prevnames: [], code: 200 });
  });
});
