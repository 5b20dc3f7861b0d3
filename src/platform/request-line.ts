import type { NextFunction, Request, Response } from 'express';

export const VERSION_NOT_SUPPORTED_MESSAGE = 'HTTP version not supported: use HTTP/1.1';
export const MALFORMED_REQUEST_MESSAGE = 'Malformed HTTP request';
export const HOST_REQUIRED_MESSAGE = 'Host header is required';
export const MULTIPLE_HOSTS_MESSAGE = 'Multiple Host headers';

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
 * First in the chain: refuses what Node's parser lets through, a request line with
 * `HTTP/2.0` (505, RFC 9110 §15.6.6) or without a version or with `HTTP/0.9` (400); more
 * than one Host field line, on any version (400, RFC 9112 §3.2: Node takes the first, and a
 * proxy in front may have routed on another); and an HTTP/1.1 request without Host (400, as
 * Node's own check would, but with the error contract's body). Each answer closes the
 * connection, unread body and all.
 */
export function checkRequestLine(req: Request, res: Response, next: NextFunction): void {
  let refusal: [number, string] | undefined;
  if (req.httpVersionMajor >= 2) refusal = [505, VERSION_NOT_SUPPORTED_MESSAGE];
  else if (req.httpVersionMajor !== 1) refusal = [400, MALFORMED_REQUEST_MESSAGE];
  else if (hostFieldCount(req.rawHeaders) > 1) refusal = [400, MULTIPLE_HOSTS_MESSAGE];
  else if (req.httpVersionMinor === 1 && req.headers.host === undefined) {
    refusal = [400, HOST_REQUIRED_MESSAGE];
  }
  if (!refusal) {
    next();
    return;
  }
  const [code, message] = refusal;
  res.set('Connection', 'close').status(code).json({ message, code });
}
