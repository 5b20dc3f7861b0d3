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

/** A request as Express leaves it once routed: what `routeOf` and `pathOf` read. */
type RoutedRequest = IncomingMessage & {
  originalUrl?: string;
  baseUrl?: string;
  route?: { path?: unknown; methods?: Record<string, boolean | undefined> };
};

/**
 * The template of the route that took the request, as Express registered it, the global
 * `api` prefix included (`/api/users/{:userId}/prevnames`, `/api/prevnames`); null when no
 * route did (an unknown path, a body refused before routing). What the log lines name a
 * request by: never its query string, which carries a search's name and cursors.
 *
 * Express leaves the route it dispatched to on `req.route`, and the path its router is
 * mounted at on `req.baseUrl` (empty for the application's own routes, Nest's among them).
 * Nest answers an unknown path under the prefix from a route of every method, `*path`, in a
 * router mounted at `/api`: that is no route. A middleware applied to a controller's routes
 * (`answerAsUnknownRoute`, say) is a route of their own template.
 */
export function routeOf(req: RoutedRequest): string | null {
  const route = req.route;
  const path = route?.path;
  if (typeof path !== 'string') return null;
  if (route?.methods?._all === true && path.includes('*')) return null;
  const template = `${req.baseUrl ?? ''}${path}`;
  // Not strict routing: `/api/prevnames/` (how Nest registers a controller's middleware for
  // its root route, say) takes what `/api/prevnames` does.
  return template.length > 1 && template.endsWith('/') ? template.slice(0, -1) : template;
}

/** The path the request asked for, as it was sent, without its query string (nor a fragment). */
export function pathOf(req: RoutedRequest): string {
  const target = req.originalUrl ?? req.url ?? '';
  const end = target.search(/[?#]/);
  return end === -1 ? target : target.slice(0, end);
}

/** A URL without its credentials nor query, for the log. */
export function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return '(unparsable URL)';
  }
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
