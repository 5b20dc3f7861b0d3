import type { NextFunction, Request, Response } from 'express';
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { pathOf, requestIdOf, routeOf } from './logger.js';

/** Responses whose route asked to be left out of the access log (see NoAccessLog). */
const unlogged = new WeakSet<ServerResponse>();

/** Leaves this response out of the access log; called by the route's traits, before it ends. */
export function skipAccessLog(res: ServerResponse): void {
  unlogged.add(res);
}

/**
 * The access log: one line per request when its answer is written (or when the client
 * left before it), with the request id, the client's address and the time taken. Every
 * request the application answers is logged, those refused before any route is chosen
 * included (404, 413, 415, a body that is not JSON), unless its route declares
 * `@NoAccessLog()` (the probes; the streams, which log their own open and close). Every
 * request gets its id here (the caller's `X-Request-Id` when sane), returned in
 * `X-Request-Id` and used by the error filter's log lines. A line names the request by
 * `route`, the template of the route that took it (null when none did), and `req.url`, its
 * path without the query string: a query string is never logged (a search's name and
 * cursor, a history's cursor are in it).
 *
 * It replaces pino-http's per-request logger: a child logger and an async-local store for
 * every request cost about a fifth of a history read's time (BENCHMARKS.md), for a context
 * only the error filter needs, and it passes the request id itself.
 */
export function accessLog(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const id = requestIdOf(req);
    (req as Request & { id: string }).id = id;
    res.setHeader('X-Request-Id', id);
    const started = performance.now();
    res.once('close', () => {
      if (unlogged.has(res)) return;
      const line = {
        req: { id, method: req.method, url: pathOf(req), remoteAddress: req.ip },
        route: routeOf(req),
        res: { statusCode: res.statusCode },
        responseTime: Math.round(performance.now() - started),
        msg: res.writableFinished ? 'request completed' : 'request aborted',
      };
      logger[res.writableFinished ? 'info' : 'warn'](line);
    });
    next();
  };
}
