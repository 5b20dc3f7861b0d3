import { STATUS_CODES } from 'node:http';
import { parseResponse } from './raw-http.js';

/** The answers of the HTTP layer, as the tests of each part of it compare them. */

export const HISTORY = '/api/users/1/prevnames';
export const VERSION = 'HTTP version not supported: use HTTP/1.1';
export const MALFORMED = 'Malformed HTTP request';

/** The exact bytes of an answer written on a connection that then closes. */
export function closingAnswer(code: number, message: string): string {
  const body = JSON.stringify({ message, code });
  return (
    `HTTP/1.1 ${code} ${STATUS_CODES[code]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/**
 * The exact bytes of the answer Node's HTTP server gives by itself to a request it refuses
 * before the application sees it (its parser's 400, 413 and 431, its 408): no body.
 */
export function nodeRefusal(code: 400 | 408 | 413 | 431): string {
  return `HTTP/1.1 ${code} ${STATUS_CODES[code]}\r\nConnection: close\r\n\r\n`;
}

/** An answer's status line, headers (but Date) and body, to compare with toEqual. */
export function answer(raw: string) {
  const { status, headers, body } = parseResponse(Buffer.from(raw, 'latin1'));
  const { date: _date, ...rest } = headers;
  return { status, headers: rest, body };
}

/** What `answer()` gives for the error contract's answer through a response object. */
export function jsonAnswer(code: number, message: string, extra: Record<string, string> = {}) {
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

/** A request line and Host, then `headers` (which end the head with a blank line, or not). */
export const head = (line: string, headers = '') => `${line}\r\nHost: 127.0.0.1\r\n${headers}`;
