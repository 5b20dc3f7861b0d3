import { ConfigService } from '@nestjs/config';
import type { NestExpressApplication } from '@nestjs/platform-express';
import helmet from 'helmet';
import express, { json, type NextFunction, type Request, type Response } from 'express';
import { isUtf8 } from 'node:buffer';
import { fileURLToPath } from 'node:url';
import { Logger } from 'nestjs-pino';
import { HttpExceptionFilter } from './common/http-exception.filter.js';
import { LISTEN_ROUTE } from './common/logger.js';
import { answerMalformedRequestsWithJson } from './common/malformed-requests.js';
import { createValidationPipe } from './common/validation.js';
import { serveOpenApi } from './openapi/openapi.js';
import type { AppConfig } from './config/configuration.js';

export const API_PREFIX = 'api';
export const BODY_LIMIT = '16kb';

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
  answerMalformedRequestsWithJson(app);
  app.set('query parser', 'simple');
  app.set('trust proxy', http.trustProxy);
  // Not on the stream: its clients are EventSource readers, not documents, and every header
  // is held for the life of a connection.
  const securityHeaders = helmet();
  // Swagger UI over plain HTTP (an internal host name, a port-forward): helmet's
  // `upgrade-insecure-requests` would make the browser fetch its scripts and styles over
  // https, which nothing serves, and the page would stay blank. Over HTTPS it stays.
  const docsOverHttpHeaders = helmet({
    contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } },
  });
  const listenPath = `/${API_PREFIX}/${LISTEN_ROUTE}`;
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (req.path === listenPath) return next();
    if (!req.secure && isDocsPath(req.path)) return docsOverHttpHeaders(req, res, next);
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
  app.use(requireJsonContentType);
  app.use(
    json({ limit: BODY_LIMIT, strict: false, type: 'application/json', verify: rejectInvalidUtf8 }),
  );
  app.useGlobalPipes(createValidationPipe());
  serveOpenApi(app);
  app.useGlobalFilters(new HttpExceptionFilter());
  return app;
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

/** A request that carries a body must say it is JSON: anything else is a 415. */
function requireJsonContentType(req: Request, res: Response, next: NextFunction): void {
  const hasBody =
    req.headers['transfer-encoding'] !== undefined ||
    (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
  if (hasBody && !req.is('application/json')) {
    res.status(415).json({ message: 'Content-Type must be application/json', code: 415 });
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
