import { ConfigService } from '@nestjs/config';
import type { NestExpressApplication } from '@nestjs/platform-express';
import helmet from 'helmet';
import express, { type NextFunction, type Request, type Response } from 'express';
import { fileURLToPath } from 'node:url';
import { Logger, PinoLogger } from 'nestjs-pino';
import { accessLog } from './common/access-log.js';
import { HttpExceptionFilter } from './common/http-exception.filter.js';
import { LISTEN_ROUTE } from './common/logger.js';
import { KnownQueryKeysGuard } from './common/query-keys.guard.js';
import { createValidationPipe } from './common/validation.js';
import { serveOpenApi } from './openapi/openapi.js';
import type { AppConfig } from './config/configuration.js';
import { answerHttpLayerWithJson } from './platform/http-layer.js';
import { jsonBodies } from './platform/json-body.js';

export const API_PREFIX = 'api';
/** Request bodies: 16 KiB. */
export const BODY_LIMIT_BYTES = 16 * 1024;
const LISTEN_PATH = `/${API_PREFIX}/${LISTEN_ROUTE}`;
const HEALTH_PATH = `/${API_PREFIX}/health`;

/** The live page (issue 8): beside this module, in src/ under jest and in dist/ once built. */
export const PUBLIC_DIR = fileURLToPath(new URL('public/', import.meta.url));

/** The page loads only its own files and talks only to this origin: no inline code at all. */
const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Everything an application needs besides its modules: the logger, the prefix, the body
 * parser, validation and the error contract. `main.ts` and the tests both call it, so the
 * tests drive the same application that runs in production.
 */
export function configureApp(app: NestExpressApplication): NestExpressApplication {
  const http = app.get<ConfigService<AppConfig, true>>(ConfigService).get('http', { infer: true });
  app.useLogger(app.get(Logger));
  app.setGlobalPrefix(API_PREFIX);
  app.disable('x-powered-by');
  // API answers are small and never revalidated: hashing each body for an ETag is wasted work
  // (the page's static files keep theirs).
  app.disable('etag');
  answerHttpLayerWithJson(app, http);
  // Every request the application serves but the probes and the streams (which log their own
  // open and close); what the HTTP layer refuses above is not the application's to log.
  app.use(
    accessLog(PinoLogger.root, (path) => path.startsWith(HEALTH_PATH) || path === LISTEN_PATH),
  );
  app.set('query parser', 'simple');
  app.set('trust proxy', http.trustProxy);
  // Not on the stream: its clients are EventSource readers, not documents, and every header
  // is held for the life of a connection. The JSON routes get API_SECURITY_HEADERS; helmet's
  // document policies are for what a browser renders: the page and Swagger UI.
  const securityHeaders = helmet();
  // Swagger UI over plain HTTP (an internal host name, a port-forward): helmet's
  // `upgrade-insecure-requests` would make the browser fetch its scripts and styles over
  // https, which nothing serves, and the page would stay blank. Over HTTPS it stays.
  const docsOverHttpHeaders = helmet({
    contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } },
  });
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (req.path === LISTEN_PATH) return next();
    if (isDocsPath(req.path)) {
      return (req.secure ? securityHeaders : docsOverHttpHeaders)(req, res, next);
    }
    if (isApiPath(req.path)) {
      res.setHeaders(API_SECURITY_HEADERS);
      return next();
    }
    return securityHeaders(req, res, next);
  });
  // The live page, after helmet so it gets its headers too, with a stricter CSP of its own.
  app.use(servePageOutsideApi());
  if (http.corsOrigins) {
    app.enableCors({
      origin: http.corsOrigins,
      methods: ['GET', 'POST'],
      allowedHeaders: ['Content-Type', 'Authorization', 'Last-Event-ID', 'X-Request-Id'],
      exposedHeaders: ['X-Request-Id', 'Retry-After'],
      maxAge: 600,
    });
  }
  app.use(...jsonBodies(BODY_LIMIT_BYTES));
  app.useGlobalGuards(new KnownQueryKeysGuard());
  app.useGlobalPipes(createValidationPipe());
  serveOpenApi(app);
  app.useGlobalFilters(new HttpExceptionFilter());
  return app;
}

/**
 * The security headers that matter for a JSON API (OWASP's REST security cheat sheet): the
 * answer is never a document, never framed and never sniffed as something else; HTTPS once
 * seen. One precomputed set: helmet's thirteen middlewares, with document policies a JSON
 * answer does not need, cost a measurable share of a history read (BENCHMARKS.md).
 */
const API_SECURITY_HEADERS = new Map([
  ['Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'"],
  ['Strict-Transport-Security', 'max-age=31536000; includeSubDomains'],
  ['X-Content-Type-Options', 'nosniff'],
  ['X-Frame-Options', 'DENY'],
  ['Cross-Origin-Resource-Policy', 'same-origin'],
  ['Referrer-Policy', 'no-referrer'],
]);

/** Under the API prefix (the router matches it case-insensitively too). */
function isApiPath(path: string): boolean {
  const prefix = path.slice(0, API_PREFIX.length + 2).toLowerCase();
  return prefix === `/${API_PREFIX}` || prefix === `/${API_PREFIX}/`;
}

/** Swagger UI's page and files (matched as the router matches: case-insensitively). */
function isDocsPath(path: string): boolean {
  const lower = path.toLowerCase();
  return lower === `/${API_PREFIX}/docs` || lower.startsWith(`/${API_PREFIX}/docs/`);
}

/**
 * Outside /api only the page's files exist; anything else there gets the contract's JSON 404
 * (Nest's own not-found handler covers only its prefix). API requests skip the file lookup
 * altogether: a stat() per history read cost a measurable share of its time.
 */
function servePageOutsideApi() {
  const page = express.static(PUBLIC_DIR, {
    index: 'index.html',
    dotfiles: 'ignore',
    redirect: false,
    setHeaders: (res) => {
      // No build step, so no hashed names: revalidate every time (ETag makes that cheap).
      res.setHeader('Cache-Control', 'no-cache');
      res.setHeader('Content-Security-Policy', PAGE_CSP);
    },
  });
  const apiPath = `/${API_PREFIX}`;
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.path === apiPath || req.path.startsWith(`${apiPath}/`)) {
      next();
      return;
    }
    page(req, res, () => {
      res.status(404).json({ message: `Cannot ${req.method} ${req.path}`, code: 404 });
    });
  };
}
