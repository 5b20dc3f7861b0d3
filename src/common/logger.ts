import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Params } from 'nestjs-pino';
import type { DestinationStream } from 'pino';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The request's id: the caller's `X-Request-Id` when it is a sane one, else a new one. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * Structured logs through pino, for Nest's logger: JSON lines on stdout, or the lines of
 * `destination` (see `personalLogs`). The access log is `accessLog` (one line per request,
 * with its id), so nestjs-pino binds no per-request logger to any route.
 */
export function loggerOptions(level: string, destination?: DestinationStream): Params {
  const options = {
    level,
    // The access log passes `req` and `res` already shaped: pino-http's serializers (which
    // wrap what is logged in a `raw` field) hand them on as they are.
    serializers: {
      req: ({ raw }: { raw: unknown }) => raw,
      res: ({ raw }: { raw: unknown }) => raw,
    },
  };
  return { forRoutes: [], pinoHttp: destination ? [options, destination] : options };
}

/**
 * Logs for a person: readable lines (pino-pretty) when stdout is a terminal and NODE_ENV is
 * not `production`; undefined, i.e. JSON lines, for everything else (a pipe, a file, a log
 * collector, the tests).
 */
export async function personalLogs(
  nodeEnv: string | undefined,
  stdout: { isTTY?: boolean } = process.stdout,
): Promise<DestinationStream | undefined> {
  if (stdout.isTTY !== true || nodeEnv === 'production') return undefined;
  // Loaded only here: it adds 50-150 ms to a start that production never pays.
  const { default: pretty } = await import('pino-pretty');
  return pretty({
    // Written as they come, as JSON lines are: in order with everything else, and all out
    // before process.exit().
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,context',
    messageFormat: '{if context}[{context}] {end}{msg}',
    singleLine: true,
  });
}
