import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
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

/** What Node's HTTP parser rejects, by its error code: status and message (400 otherwise). */
const PARSER_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, HEAD_TOO_LARGE_MESSAGE],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'Chunk extensions are too large'],
  HPE_INVALID_VERSION: [505, VERSION_NOT_SUPPORTED_MESSAGE],
  // The HTTP/2 connection preface ("PRI * HTTP/2.0"): a client speaking HTTP/2 without TLS.
  HPE_PAUSED_H2_UPGRADE: [505, VERSION_NOT_SUPPORTED_MESSAGE],
  ERR_HTTP_REQUEST_TIMEOUT: [408, REQUEST_TIMEOUT_MESSAGE],
};

export interface HttpLayerSettings {
  /** The request line and headers must arrive within this time (Node's `headersTimeout`). */
  headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this time (`requestTimeout`). */
  requestTimeoutMs: number;
  /** The body size limit, in bytes: a 100-continue request announcing more gets no 100. */
  bodyLimitBytes: number;
}

/** The response in progress on each connection, to tell whether an error can still be answered. */
const responses = new WeakMap<Duplex, ServerResponse>();
/** Connections whose next request Node's parser refused: they get one answer, then close. */
const refused = new WeakSet<Duplex>();
/** Requests that asked for `100 Continue` and have not had it yet. */
const awaitingContinue = new WeakSet<IncomingMessage>();

/**
 * The error contract for every answer Node's HTTP layer would give by itself, with a bare
 * status and an empty body: a request its parser refuses (invalid bytes, an oversized head,
 * an HTTP version other than 1.x), a request that times out (408), an `Expect` other than
 * `100-continue` (417), a `CONNECT` (which Node answers by closing the connection), and an
 * HTTP/1.1 request without Host. Here each gets `{message, code}`. Only public `http.Server`
 * events and settings are used.
 */
export function answerHttpLayerWithJson(
  app: NestExpressApplication,
  settings: HttpLayerSettings,
): void {
  const server = app.getHttpServer();
  server.headersTimeout = settings.headersTimeoutMs;
  server.requestTimeout = settings.requestTimeoutMs;

  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // Node reports each further chunk of a connection it gave up on again: one answer only.
    if (refused.has(socket)) return;
    refused.add(socket);
    const [code, message] = PARSER_ERRORS[error.code ?? ''] ?? [400, MALFORMED_REQUEST_MESSAGE];
    const response = responses.get(socket);
    if (!response || response.writableFinished) {
      endWithJson(socket, code, message);
    } else if (!response.req.complete) {
      // The request being answered is the one at fault (a body that never came): answer it,
      // unless its answer has begun, whose bytes the error would corrupt.
      if (response.headersSent) socket.destroy();
      else endWithJson(socket, code, message);
    } else {
      // A request after the one being answered is at fault: its answer follows that one.
      response.once('finish', () => endWithJson(socket, code, message));
      response.once('close', () => {
        if (!response.writableFinished) socket.destroy();
      });
    }
  });

  server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    // The body, if any, was never asked for: close rather than read it as the next request.
    sendJson(res, 417, EXPECTATION_FAILED_MESSAGE, true);
  });

  // Node sends `100 Continue` before the application sees the request; here it is sent only
  // once the body is wanted, so a request refused on its headers alone (415, 413) gets its
  // answer at once and its client never sends the body. (Node closes the connection after a
  // final answer that had no `100 Continue`, as the body may still follow.)
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    awaitingContinue.add(req);
    server.emit('request', req, res);
  });

  // Not a proxy. Node would close the connection without a word.
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    endWithJson(socket, 404, `Cannot CONNECT ${req.url ?? ''}`);
  });

  app.use(checkRequestLine);
}

/**
 * Sends `100 Continue` to a request that asked for it, right before its body is read: unless
 * it announces a body over the limit, which is refused at once (413) instead.
 */
export function continueWhenBodyIsWanted(bodyLimitBytes: number) {
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!awaitingContinue.has(req)) {
      next();
      return;
    }
    awaitingContinue.delete(req);
    if (carriesBody(req) && Number(req.headers['content-length']) > bodyLimitBytes) {
      next(Object.assign(new Error('Body too large'), { status: 413, type: 'entity.too.large' }));
      return;
    }
    if (carriesBody(req)) res.writeContinue();
    next();
  };
}

/** Whether a request announces a body (a chunked one, or a non-zero Content-Length). */
export function carriesBody(req: IncomingMessage): boolean {
  return (
    req.headers['transfer-encoding'] !== undefined ||
    (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0')
  );
}

/**
 * First in the chain: notes the response in progress, refuses HTTP versions other than 1.x
 * (Node's parser lets 0.9 and 2.0 through), and requires Host on HTTP/1.1 (Node's own check
 * is off, see ExpressHttpAdapter, because its answer has no body).
 */
function checkRequestLine(req: Request, res: Response, next: NextFunction): void {
  responses.set(req.socket, res);
  if (req.httpVersionMajor !== 1) {
    sendJson(res, 505, VERSION_NOT_SUPPORTED_MESSAGE, true);
    return;
  }
  if (req.httpVersionMinor === 1 && req.headers.host === undefined) {
    sendJson(res, 400, 'Host header is required', true);
    return;
  }
  next();
}

function sendJson(res: ServerResponse, code: number, message: string, close: boolean): void {
  const body = JSON.stringify({ message, code });
  res.writeHead(code, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    ...(close ? { Connection: 'close' } : {}),
  });
  res.end(body);
}

/** Writes a whole answer on a connection no response object owns, then closes it. */
function endWithJson(socket: Duplex, code: number, message: string): void {
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
