import { Reflector } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger, PinoLogger } from 'nestjs-pino';
import { accessLog } from './common/access-log.js';
import { HttpExceptionFilter } from './common/http-exception.filter.js';
import { RouteTraitsGuard } from './common/route-traits.js';
import { securityHeaders } from './common/security-headers.js';
import { createValidationPipe } from './common/validation.js';
import type { ConfigOf } from './config/config-section.js';
import { httpConfig } from './config/http.config.js';
import { serveOpenApi } from './openapi/openapi.js';
import { servePageOutsideApi } from './page/live-page.js';
import { configureHttpLayer } from './platform/http-layer.js';
import { jsonBodies } from './platform/json-body.js';

export const API_PREFIX = 'api';
/** Request bodies: 16 KiB. */
export const BODY_LIMIT_BYTES = 16 * 1024;

/**
 * Everything an application needs besides its modules, in the order a request meets it.
 * `main.ts` and the tests both call it, so the tests drive the same application that runs in
 * production. What adapts Express, Node's HTTP server or Nest is in src/platform (its README
 * says what each adaptation is worth).
 */
export function configureApp(app: NestExpressApplication): NestExpressApplication {
  const http = app.get<ConfigOf<typeof httpConfig>>(httpConfig.KEY);
  app.useLogger(app.get(Logger));
  app.setGlobalPrefix(API_PREFIX);
  app.disable('x-powered-by');
  // API answers are small and never revalidated: hashing each body for an ETag is wasted work
  // (the page's static files keep theirs).
  app.disable('etag');
  app.set('query parser', 'simple');
  app.set('trust proxy', http.trustProxy);
  // What Node's HTTP layer refuses never reaches the application, nor its access log.
  configureHttpLayer(app, http);
  app.use(accessLog(PinoLogger.root));
  app.use(securityHeaders(API_PREFIX));
  // After the security headers, so the page gets them too (with a stricter CSP of its own).
  app.use(servePageOutsideApi(API_PREFIX));
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
  // The traits routes declare (@NoAccessLog(), @StreamRoute()…), then the query keys.
  app.useGlobalGuards(new RouteTraitsGuard(app.get(Reflector)));
  app.useGlobalPipes(createValidationPipe());
  serveOpenApi(app);
  app.useGlobalFilters(new HttpExceptionFilter());
  return app;
}
