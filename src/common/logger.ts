import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Params } from 'nestjs-pino';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request's id: the caller's `X-Request-Id` when it is a sane one, else a new one. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * Structured JSON logs through pino, for Nest's logger. The access log is `accessLog` (one line
 * per request, with its id), so nestjs-pino binds no per-request logger to any route.
 */
export function loggerOptions(level: string): Params {
  return {
    forRoutes: [],
    pinoHttp: {
      level,
      // The access log passes `req` and `res` already shaped: pino-http's serializers (which
      // wrap what is logged in a `raw` field) hand them on as they are.
      serializers: {
        req: ({ raw }: { raw: unknown }) => raw,
        res: ({ raw }: { raw: unknown }) => raw,
      },
    },
  };
}
