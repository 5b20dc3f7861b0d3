import { useApp } from './support/app.js';
import { uniqueUserId } from './support/events.js';
import { http } from './support/http.js';

/** What the page's origin serves, over plain HTTP: the page, its files, and nothing else. */

describe('the page and its files (PostgreSQL and Redis)', () => {
  const fx = useApp();

  it('serves the page and its files at / and keeps the JSON 404 for everything else', async () => {
    const index = await http(`${fx.url}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    // A CSP of the page's own (no inline code, this origin only); helmet's other headers stay.
    expect(index.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    );
    expect(index.headers.get('x-content-type-options')).toBe('nosniff');
    expect(index.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('etag')).toBeTruthy();
    expect(index.text).toContain('<script type="module" src="app.js"></script>');
    expect(index.text).not.toMatch(/<script>|<style|style=|\son[a-z]+=/);

    for (const [path, type] of [
      ['/app.js', 'text/javascript; charset=utf-8'],
      ['/app.css', 'text/css; charset=utf-8'],
      ['/favicon.svg', 'image/svg+xml'],
    ]) {
      const res = await http(`${fx.url}${path}`);
      expect([path, res.status, res.headers.get('content-type')]).toEqual([path, 200, type]);
    }

    for (const path of ['/api/nope', '/api', '/api/', '/api/index.html', '/api/app.js']) {
      const res = await http(`${fx.url}${path}`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(res.body).toEqual({ message: `Cannot GET ${path}`, code: 404 });
    }
    // Nothing else is served: no other file, no dotfile, no other method on the page.
    for (const [method, path] of [
      ['GET', '/nope.js'],
      ['GET', '/public/app.js'],
      ['GET', '/.env'],
      ['GET', '/../package.json'],
      ['POST', '/'],
    ]) {
      expect([method, path, (await http(`${fx.url}${path}`, { method })).status]).toEqual([
        method,
        path,
        404,
      ]);
    }

    // The API itself is untouched.
    const nobody = uniqueUserId('nobody');
    const history = await fx.history(nobody);
    expect(history.body).toEqual({ userId: nobody, prevnames: [], code: 200 });
  });
});
