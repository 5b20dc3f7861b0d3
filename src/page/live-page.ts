import express, { type NextFunction, type Request, type Response } from 'express';
import { fileURLToPath } from 'node:url';

/** The live page (issue 8): src/public under jest, dist/public once built. */
const PUBLIC_DIR = fileURLToPath(new URL('../public/', import.meta.url));

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
 * Outside the API prefix only the page's files exist; anything else there gets the
 * contract's JSON 404 (Nest's own not-found handler covers only its prefix). API requests skip
 * the file lookup altogether: a stat() per history read cost a measurable share of its time.
 */
export function servePageOutsideApi(apiPrefix: string) {
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
  const apiPath = `/${apiPrefix}`;
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
