import { hostFieldCount, statusOfRefusedVersion } from './request-line.js';

const GOOD = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';

/** A chunk, and how much of it Node's parser read: up to the byte at fault (a bare LF included). */
const at = (chunk: string, parsedUpTo: string) => {
  expect(chunk.startsWith(parsedUpTo)).toBe(true);
  return [Buffer.from(chunk, 'latin1'), parsedUpTo.length] as const;
};

// The positions are those Node 24's parser reports (`bytesParsed`) for each chunk; the e2e
// specs (test/http-versions.e2e-spec.ts) check the same requests against the real parser.
describe('statusOfRefusedVersion', () => {
  it.each([
    ['HTTP/9.9', at('GET / HTTP/9.9\r\nHost: x\r\n\r\n', 'GET / HTTP/9.9')],
    ['HTTP/3.0', at('GET /x?y=1 HTTP/3.0\r\n\r\n', 'GET /x?y=1 HTTP/3.0')],
    [
      'HTTP/2.1 after a good request',
      at(`${GOOD}POST /a HTTP/2.1\r\n\r\n`, `${GOOD}POST /a HTTP/2.1`),
    ],
  ])('is a 505 for a well-formed line naming major 2 or later: %s', (_case, [packet, parsed]) => {
    expect(statusOfRefusedVersion(packet, parsed)).toBe(505);
  });

  it.each([
    ['HTTP/1.2 (major 1)', at('GET / HTTP/1.2\r\n\r\n', 'GET / HTTP/1.2')],
    ['HTTP/0.8', at('GET / HTTP/0.8\r\n\r\n', 'GET / HTTP/0.8')],
    ['a bare LF after HTTP/9.9', at('GET / HTTP/9.9\nHost: x\n\n', 'GET / HTTP/9.9')],
    [
      'a bare LF after HTTP/2.0',
      at(`${GOOD}GET / HTTP/2.0\nHost: x\n\n`, `${GOOD}GET / HTTP/2.0\n`),
    ],
    ['a space after the version', at('GET / HTTP/2.0 \r\n\r\n', 'GET / HTTP/2.0')],
    ['HTTP/1.x', at('GET / HTTP/1.x\r\n\r\n', 'GET / HTTP/1.')],
    ['HTTP/01.1', at('GET / HTTP/01.1\r\n\r\n', 'GET / HTTP/0')],
    ['HTTP/10.0', at('GET / HTTP/10.0\r\n\r\n', 'GET / HTTP/1')],
    ['HTTP/2 (no minor)', at('GET / HTTP/2\r\n\r\n', 'GET / HTTP/2')],
    ['a line cut before its CRLF', at('GET / HTTP/9.9', 'GET / HTTP/9.9')],
    ['a line whose start came in an earlier chunk', at('TP/9.9\r\n\r\n', 'TP/9.9')],
    ['two spaces after the method', at('GET  / HTTP/9.9\r\n\r\n', 'GET  / HTTP/9.9')],
  ])('is a 400 for anything else: %s', (_case, [packet, parsed]) => {
    expect(statusOfRefusedVersion(packet, parsed)).toBe(400);
  });

  it('is a 400 when Node gives no packet or position', () => {
    expect(statusOfRefusedVersion(undefined, 14)).toBe(400);
    expect(statusOfRefusedVersion(Buffer.from('GET / HTTP/9.9\r\n\r\n'), undefined)).toBe(400);
    expect(statusOfRefusedVersion(Buffer.from('GET / HTTP/9.9\r\n\r\n'), 0)).toBe(400);
    expect(statusOfRefusedVersion(Buffer.from('GET / HTTP/9.9\r\n\r\n'), 999)).toBe(400);
  });
});

describe('hostFieldCount', () => {
  it('counts every Host field line, whatever the case of its name', () => {
    expect(hostFieldCount(['Host', 'a', 'Accept', '*/*'])).toBe(1);
    expect(hostFieldCount(['Host', 'a', 'host', 'a'])).toBe(2);
    expect(hostFieldCount(['HOST', 'a', 'Accept', '*/*', 'hOsT', 'b', 'host', ''])).toBe(3);
  });

  it('counts no other field, nor a value that says Host', () => {
    expect(hostFieldCount([])).toBe(0);
    expect(hostFieldCount(['X-Forwarded-Host', 'a', 'Hosts', 'b', 'Referer', 'Host'])).toBe(0);
  });
});
