import { raw, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { isUtf8 } from 'node:buffer';
import {
  BODY_TOO_LARGE_MESSAGE,
  UNSUPPORTED_CHARSET_MESSAGE,
  UNSUPPORTED_MEDIA_TYPE_MESSAGE,
} from '../common/http-exception.filter.js';
import { carriesBody, continueWhenBodyIsWanted } from './expect-continue.js';
import { sendJson } from './http-answers.js';

/**
 * Request bodies, in place of Express's json() parser: a body must say it is JSON (else 415),
 * declare no charset but utf-8 (else 415, before it is read), stay within the limit (413:
 * before it is read when its Content-Length says so; body-parser's when chunked), and is
 * decoded as UTF-8 whatever its header says (bytes that are not UTF-8 are a 400).
 * body-parser's json() decodes in the charset a request declares (iconv-lite: utf-16,
 * latin1…), which RFC 8259 leaves no room for; its errors are the ones the error filter
 * knows (`entity.parse.failed`, `entity.too.large`).
 */
export function jsonBodies(bodyLimitBytes: number): RequestHandler[] {
  return [
    requireJsonContentType,
    refuseAnnouncedBodyOverLimit(bodyLimitBytes),
    continueWhenBodyIsWanted,
    // The bytes as they came, never decoded in a declared charset: JSON here is UTF-8.
    raw({ limit: bodyLimitBytes, type: 'application/json', verify: rejectInvalidUtf8 }),
    parseJsonBody,
  ];
}

/**
 * A request that carries a body must say it is JSON, and JSON here is UTF-8 (RFC 8259): any
 * other type, or a charset other than utf-8 declared anywhere in the header, is a 415.
 */
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
 * A body whose Content-Length is over the limit is refused as soon as the headers are in, with
 * or without `Expect: 100-continue`, and the connection closed after the answer: its body is
 * never read. (body-parser refuses it on the same header, but only once it has read the whole
 * body, bounded by the request timeout alone, to keep the connection.) Node's parser lets only
 * digits through (a sign, a fraction, a list, a second Content-Length line or one beside
 * Transfer-Encoding are its 400s), so the value is a number here. The length counts the bytes
 * sent, compressed or not (body-parser's limit counts them decoded as well). A chunked body
 * has no length to judge: body-parser's 413 refuses it.
 */
export function refuseAnnouncedBodyOverLimit(bodyLimitBytes: number) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const length = req.headers['content-length'];
    if (length !== undefined && Number(length) > bodyLimitBytes) {
      sendJson(res, 413, BODY_TOO_LARGE_MESSAGE, true);
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

/**
 * The JSON text of a body read by `raw()`, decoded as UTF-8 whatever the request says (a
 * leading byte order mark is ignored, as RFC 8259 allows). An empty body is an empty object,
 * left to validation to refuse, as Express's json() parser did.
 */
function parseJsonBody(req: Request, _res: Response, next: NextFunction): void {
  const body: unknown = req.body;
  if (!Buffer.isBuffer(body)) {
    next();
    return;
  }
  const text = body.toString('utf8');
  try {
    const parsed: unknown =
      text.length === 0 ? {} : JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
    req.body = parsed;
  } catch {
    next(Object.assign(new Error('Invalid JSON'), { status: 400, type: 'entity.parse.failed' }));
    return;
  }
  next();
}

function rejectInvalidUtf8(_req: unknown, _res: unknown, buffer: Buffer): void {
  if (!isUtf8(buffer)) {
    throw Object.assign(new Error('Request body is not valid UTF-8'), {
      status: 400,
      expose: true,
    });
  }
}
