import { JSON_TYPE, LISTEN } from './support/api.js';
import { useApp } from './support/app.js';
import { type HostileCase, itRefusesEachExactly, NODE, request } from './support/hostile.js';
import { failTestsOnProcessFailures } from './support/process-spies.js';
import { rawRequest } from './support/raw-http.js';

/**
 * Request lines and headers no client would send, written byte for byte: each gets its exact
 * 4xx. (Malformed request lines and HTTP versions: http-request-lines.e2e-spec.ts.)
 */
describe('hostile input: hand-made request heads', () => {
  const fx = useApp();
  failTestsOnProcessFailures();

  const cases: HostileCase[] = [
    [
      'a 100 KB user id in the URL',
      request(`GET /api/users/${'x'.repeat(100_000)}/prevnames HTTP/1.1`),
      431,
      NODE,
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
      NODE,
    ],
    [
      '3,000 headers',
      request(
        `GET /api/users/1/prevnames HTTP/1.1`,
        Array.from({ length: 3_000 }, (_, i) => `X-F${i}: v\r\n`).join(''),
      ),
      431,
      NODE,
    ],
    [
      'a raw 0xFF byte in the path',
      Buffer.concat([
        Buffer.from('GET /api/users/a'),
        Buffer.from([0xff]),
        Buffer.from('/prevnames HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
      ]),
      400,
      NODE,
    ],
    [
      'a raw NUL byte in the path',
      Buffer.concat([
        Buffer.from('GET /api/users/a'),
        Buffer.from([0x00]),
        Buffer.from('/prevnames HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'),
      ]),
      400,
      NODE,
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
    ['an unknown method', request(`FOO /api/users/1/prevnames HTTP/1.1`), 400, NODE],
    [
      'no Host header',
      `GET /api/users/1/prevnames HTTP/1.1\r\nConnection: close\r\n\r\n`,
      400,
      'Host header is required',
    ],
    [
      'a second Host header, naming another site',
      request(`GET /api/users/1/prevnames HTTP/1.1`, 'host: evil.example\r\n'),
      400,
      'Multiple Host headers',
    ],
    [
      'TLS bytes on the plain port',
      Buffer.from([
        0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03, 0x0d, 0x0a, 0x0d, 0x0a,
      ]),
      400,
      NODE,
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

  itRefusesEachExactly(fx, cases);

  // 500 small headers, about 5.4 KB: well within the limits the server sets (16 KiB and
  // 2,000 header fields; http-head-limits.e2e-spec.ts covers both edges).
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
});
