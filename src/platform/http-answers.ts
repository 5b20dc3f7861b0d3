import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** The request line and headers, in bytes (Node counts the URL and each name and value). */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Header fields in one request, Host included. */
export const MAX_HEADER_FIELDS = 2_000;

export const HEAD_TOO_LARGE_MESSAGE = `Request line and headers exceed the limits (16 KiB, ${MAX_HEADER_FIELDS} header fields)`;
export const VERSION_NOT_SUPPORTED_MESSAGE = 'HTTP version not supported: use HTTP/1.1';
export const EXPECTATION_FAILED_MESSAGE =
  'Expectation not supported: the only Expect this service accepts is 100-continue';
export const REQUEST_TIMEOUT_MESSAGE = 'Request timed out';
export const MALFORMED_REQUEST_MESSAGE = 'Malformed HTTP request';
export const HOST_REQUIRED_MESSAGE = 'Host header is required';
export const MULTIPLE_HOSTS_MESSAGE = 'Multiple Host headers';

/** The error contract's answer through a response object, optionally closing the connection. */
export function sendJson(res: ServerResponse, code: number, message: string, close: boolean): void {
  const body = JSON.stringify({ message, code });
  res.writeHead(code, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    ...(close ? { Connection: 'close' } : {}),
  });
  res.end(body);
}

/** Writes a whole answer on a connection no response object owns, then closes it. */
export function endWithJson(socket: Duplex, code: number, message: string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({ message, code });
  socket.end(
    `HTTP/1.1 ${code} ${STATUS_CODES[code]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}
