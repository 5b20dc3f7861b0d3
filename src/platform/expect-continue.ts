import type { NextFunction, Request, Response } from 'express';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { EXPECTATION_FAILED_MESSAGE, sendJson } from './http-answers.js';

/** Requests that asked for `100 Continue` and have not had it yet. */
const awaitingContinue = new WeakSet<IncomingMessage>();

/**
 * `Expect` on Node's server: an expectation other than `100-continue` is a 417 with the error
 * contract's body (Node's own has none), and `100 Continue` waits until the body is wanted
 * (see continueWhenBodyIsWanted), where Node sends it before the application sees the request.
 */
export function answerExpectations(server: Server): void {
  server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    // The body, if any, was never asked for: close rather than read it as the next request.
    sendJson(res, 417, EXPECTATION_FAILED_MESSAGE, true);
  });

  // A request refused on its headers alone (415, 413) gets its answer at once and its client
  // never sends the body. (Node closes the connection after a final answer that had no
  // `100 Continue`, as the body may still follow.)
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    awaitingContinue.add(req);
    server.emit('request', req, res);
  });
}

/**
 * Sends `100 Continue` to a request that asked for it, right before its body is read. A body
 * refused on its headers (415, or 413 by its Content-Length: see refuseAnnouncedBodyOverLimit
 * in json-body.ts) was answered before this, without it.
 */
export function continueWhenBodyIsWanted(req: Request, res: Response, next: NextFunction): void {
  if (awaitingContinue.delete(req) && carriesBody(req)) res.writeContinue();
  next();
}

/** Whether a request announces a body (a chunked one, or a non-zero Content-Length). */
export function carriesBody(req: IncomingMessage): boolean {
  return (
    req.headers['transfer-encoding'] !== undefined ||
    (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0')
  );
}
