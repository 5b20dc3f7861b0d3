import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import type { ServerResponse } from 'node:http';

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

/**
 * Security headers on every answer: API_SECURITY_HEADERS under the API prefix, helmet's
 * document policies on what a browser renders (the page, Swagger UI). A route that is no
 * JSON answer drops the API ones (`@NoApiSecurityHeaders()`: the stream, whose clients are
 * EventSource readers, and which would hold every header for the life of a connection).
 */
export function securityHeaders(apiPrefix: string) {
  const documentHeaders = helmet();
  // Swagger UI over plain HTTP (an internal host name, a port-forward): helmet's
  // `upgrade-insecure-requests` would make the browser fetch its scripts and styles over
  // https, which nothing serves, and the page would stay blank. Over HTTPS it stays.
  const docsOverHttpHeaders = helmet({
    contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } },
  });
  // Matched as the router matches: case-insensitively.
  const api = new RegExp(`^/${apiPrefix}(?:/|$)`, 'i');
  const docs = new RegExp(`^/${apiPrefix}/docs(?:/|$)`, 'i');
  return (req: Request, res: Response, next: NextFunction): void => {
    if (!api.test(req.path)) {
      documentHeaders(req, res, next);
      return;
    }
    if (docs.test(req.path)) {
      (req.secure ? documentHeaders : docsOverHttpHeaders)(req, res, next);
      return;
    }
    res.setHeaders(API_SECURITY_HEADERS);
    next();
  };
}

/** Takes the API security headers back off a response whose route is no JSON answer. */
export function withoutApiSecurityHeaders(res: ServerResponse): void {
  for (const name of API_SECURITY_HEADERS.keys()) res.removeHeader(name);
}
