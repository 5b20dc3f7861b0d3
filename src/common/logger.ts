import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RequestMethod } from '@nestjs/common';
import type { Params } from 'nestjs-pino';

/** The SSE route, relative to the global prefix. */
export const LISTEN_ROUTE = 'webhooks/prevnames/listen';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request's id: the caller's `X-Request-Id` when it is a sane one, else a new one. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * Structured JSON logs. Every request gets an id (the caller's `X-Request-Id` when it is a
 * sane one), returned in `X-Request-Id` and attached to every log line of that request.
 */
export function loggerOptions(level: string): Params {
  return {
    // A stream lives for hours: a request logger (child logger, listeners, context) held for
    // each of tens of thousands of listeners costs more memory than the rest of the stream.
    exclude: [{ method: RequestMethod.GET, path: LISTEN_ROUTE }],
    pinoHttp: {
      level,
      genReqId: (req: IncomingMessage, res: ServerResponse) => {
        const id = requestIdOf(req);
        res.setHeader('X-Request-Id', id);
        return id;
      },
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie'],
        censor: '[redacted]',
      },
      serializers: {
        // The client's address as Express sees it: behind a proxy, the one it put in
        // X-Forwarded-For (as far as TRUST_PROXY trusts it), the same the rate limit keys on.
        req: (req: { id: string; method: string; url: string; raw: { ip?: string } }) => ({
          id: req.id,
          method: req.method,
          url: req.url,
          remoteAddress: req.raw.ip,
        }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      autoLogging: { ignore: (req) => req.url?.startsWith('/api/health') ?? false },
    },
  };
}
