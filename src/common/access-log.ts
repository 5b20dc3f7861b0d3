import type { NextFunction, Request, Response } from 'express';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { requestIdOf } from './logger.js';

/**
 * The access log: one line per request when its answer is written (or when the client
 * left before it), with the request id, the client's address and the time taken. Every
 * request gets its id here (the caller's `X-Request-Id` when sane), returned in `X-Request-Id`
 * and used by the error filter's log lines.
 *
 * It replaces pino-http's per-request logger: a child logger and an async-local store for
 * every request cost about a fifth of a history read's time (BENCHMARKS.md), for a context
 * only the error filter needs, and it passes the request id itself.
 */
export function accessLog(logger: Logger, quiet: (path: string) => boolean) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const id = requestIdOf(req);
    (req as Request & { id: string }).id = id;
    res.setHeader('X-Request-Id', id);
    if (quiet(req.path)) {
      next();
      return;
    }
    const started = performance.now();
    const line = (message: string) => ({
      req: { id, method: req.method, url: req.originalUrl, remoteAddress: req.ip },
      res: { statusCode: res.statusCode },
      responseTime: Math.round(performance.now() - started),
      msg: message,
    });
    res.once('close', () => {
      if (res.writableFinished) logger.info(line('request completed'));
      else logger.warn(line('request aborted'));
    });
    next();
  };
}
