import { json, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import {
  BODY_TOO_LARGE_MESSAGE,
  UNSUPPORTED_CHARSET_MESSAGE,
  UNSUPPORTED_MEDIA_TYPE_MESSAGE,
} from '../common/http-exception.filter.js';

/** Requests that asked for `100 Continue` and have not had it yet. */
const awaitingContinue = new WeakSet<IncomingMessage>();

/**
 * Request bodies: Express's json() parser, behind two checks on the headers alone. A body
 * must say it is JSON and declare no charset but utf-8 (else 415): json() would decode one
 * declared `utf-7` or `utf-16` in that charset (iconv-lite), which RFC 8259 leaves no room
 * for; bytes that are not UTF-8 are a 400. A body whose Content-Length is over the limit is
 * a 413 before it is read (refuseAnnouncedBodyOverLimit). `100 Continue` comes only then.
 */
export function jsonBodies(bodyLimitBytes: number): RequestHandler[] {
  return [
    requireJsonContentType,
    refuseAnnouncedBodyOverLimit(bodyLimitBytes),
    continueWhenBodyIsWanted,
    // Not strict: a body that is JSON but no object is left to validation to name.
    json({ limit: bodyLimitBytes, strict: false, verify: rejectInvalidUtf8 }),
  ];
}

/**
 * `100 Continue` waits until the body is wanted (continueWhenBodyIsWanted), where Node sends
 * it before the application sees the request: a body refused on its headers (415, 413) is
 * answered at once and never sent. (Node closes the connection after a final answer that
 * had no `100 Continue`, as the body may still follow.)
 */
export function deferContinue(server: Server): void {
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    awaitingContinue.add(req);
    server.emit('request', req, res);
  });
}

function continueWhenBodyIsWanted(req: Request, res: Response, next: NextFunction): void {
  if (awaitingContinue.delete(req) && carriesBody(req)) res.writeContinue();
  next();
}

/** Whether a request announces a body (a chunked one, or a non-zero Content-Length). */
function carriesBody(req: IncomingMessage): boolean {
  return (
    req.headers['transfer-encoding'] !== undefined ||
    (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0')
  );
}

function requireJsonContentType(req: Request, res: Response, next: NextFunction): void {
  if (!carriesBody(req)) {
    next();
    return;
  }
  if (!req.is('application/json')) {
    res.status(415).json({ message: UNSUPPORTED_MEDIA_TYPE_MESSAGE, code: 415 });
    return;
  }
  if (declaredCharsets(req.headers['content-type'] ?? '').some((charset) => charset !== 'utf-8')) {
    res.status(415).json({ message: UNSUPPORTED_CHARSET_MESSAGE, code: 415 });
    return;
  }
  next();
}

/**
 * A body whose Content-Length is over the limit is refused as soon as the headers are in, and
 * the connection closed after the answer: its body is never read. (body-parser refuses it on
 * the same header, but only once it has read the whole body, to keep the connection.) Node's
 * parser lets only digits through, so the value is a number here. A chunked body has no
 * length to judge: body-parser's 413 refuses it at the limit.
 */
export function refuseAnnouncedBodyOverLimit(bodyLimitBytes: number) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const length = req.headers['content-length'];
    if (length !== undefined && Number(length) > bodyLimitBytes) {
      res
        .set('Connection', 'close')
        .status(413)
        .json({ message: BODY_TOO_LARGE_MESSAGE, code: 413 });
      return;
    }
    next();
  };
}

/**
 * Every `charset` parameter of a Content-Type, lower-cased and unquoted. Split on every ';',
 * even one inside a quoted value: that can only find more charsets than there are, never
 * fewer, and a doubtful header is refused rather than guessed at.
 */
export function declaredCharsets(contentType: string): string[] {
  return contentType
    .split(';')
    .slice(1)
    .flatMap((parameter) => {
      const equals = parameter.indexOf('=');
      const name = (equals === -1 ? parameter : parameter.slice(0, equals)).trim().toLowerCase();
      if (name !== 'charset') return [];
      const value = equals === -1 ? '' : parameter.slice(equals + 1).trim();
      const unquoted = /^"(.*)"$/s.exec(value)?.[1]?.replace(/\\(.)/gs, '$1') ?? value;
      return [unquoted.toLowerCase()];
    });
}

function rejectInvalidUtf8(_req: unknown, _res: unknown, buffer: Buffer): void {
  if (!isUtf8(buffer)) {
    // body-parser passes it on through http-errors, which sets its `expose`.
    throw Object.assign(new Error('Request body is not valid UTF-8'), { status: 400 });
  }
}
