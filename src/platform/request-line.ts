import type { NextFunction, Request, Response } from 'express';
import {
  HOST_REQUIRED_MESSAGE,
  MALFORMED_REQUEST_MESSAGE,
  MULTIPLE_HOSTS_MESSAGE,
  sendJson,
  VERSION_NOT_SUPPORTED_MESSAGE,
} from './http-answers.js';

/**
 * A well-formed request line (RFC 9112, section 3: a method token, one space, a target, one
 * space, `HTTP/` digit `.` digit, CRLF; the target in visible ASCII) that names HTTP major version 2 or later: the one kind
 * of request line that gets a 505 (RFC 9110, section 15.6.6). Read as latin1, one character a
 * byte.
 */
const UNSUPPORTED_MAJOR_VERSION = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+ [!-~]+ HTTP\/[2-9]\.[0-9]\r\n/;

const LF = 0x0a;

/**
 * The status for a request Node's parser refused at its version (`HPE_INVALID_VERSION`, the
 * same code for `HTTP/9.9`, `HTTP/1.x`, `HTTP/01.1` or a bare LF after the version): 505 when
 * the request line it stopped in is well formed and names major version 2 or later, 400 for
 * everything else. `packet` and `parsed` are the error's `rawPacket` (the chunk being parsed)
 * and `bytesParsed` (how much of it was: up to the byte at fault, a bare LF included), both
 * public in Node's `clientError` documentation. The line is the one holding the last byte
 * parsed: several requests may share a chunk. A line whose start came in an earlier chunk is
 * judged on what this one holds; when that is not enough to see it well formed, it is a 400.
 */
export function statusOfRefusedVersion(
  packet: Buffer | undefined,
  parsed: number | undefined,
): 400 | 505 {
  if (!packet || !parsed || parsed > packet.length) return 400;
  // (A negative offset would search from the end of the chunk.)
  const start = parsed < 2 ? 0 : packet.lastIndexOf(LF, parsed - 2) + 1;
  const end = packet.indexOf(LF, start);
  if (end === -1) return 400;
  const line = packet.toString('latin1', start, end + 1);
  return UNSUPPORTED_MAJOR_VERSION.test(line) ? 505 : 400;
}

/**
 * How many Host field lines a request has, whatever the case of their names. Node keeps only
 * the first in `req.headers.host` (and drops the others silently); `rawHeaders` keeps every
 * line, names and values in turn.
 */
export function hostFieldCount(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].length === 4 && rawHeaders[i].toLowerCase() === 'host') count++;
  }
  return count;
}

/**
 * First in the chain: refuses what Node's parser lets through, a request line without a
 * version (HTTP/0.9) or with `HTTP/0.9` (400, malformed here) and `HTTP/2.0` (505); more than
 * one Host field line, on any version (400, RFC 9112 section 3.2: Node takes the first and
 * drops the others, and a proxy in front may have routed on another); and requires Host on
 * HTTP/1.1 (Node's own check is off, see ExpressHttpAdapter, because its answer has no body).
 * Each answer closes the connection, unread body and all.
 */
export function checkRequestLine(req: Request, res: Response, next: NextFunction): void {
  if (req.httpVersionMajor !== 1) {
    if (req.httpVersionMajor >= 2) sendJson(res, 505, VERSION_NOT_SUPPORTED_MESSAGE, true);
    else sendJson(res, 400, MALFORMED_REQUEST_MESSAGE, true);
    return;
  }
  if (hostFieldCount(req.rawHeaders) > 1) {
    sendJson(res, 400, MULTIPLE_HOSTS_MESSAGE, true);
    return;
  }
  if (req.httpVersionMinor === 1 && req.headers.host === undefined) {
    sendJson(res, 400, HOST_REQUIRED_MESSAGE, true);
    return;
  }
  next();
}
