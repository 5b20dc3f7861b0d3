import { useApp } from './support/app.js';
import { DOCS_HOST, useBrowser } from './support/browser.js';
import { http } from './support/http.js';

/** Swagger UI in Chromium, and the Content Security Policy that lets it run over plain HTTP. */

/** helmet's default policy, and the same without `upgrade-insecure-requests`. */
const HELMET_POLICY_OVER_HTTP =
  "default-src 'self';base-uri 'self';font-src 'self' https: data:;form-action 'self';" +
  "frame-ancestors 'self';img-src 'self' data:;object-src 'none';script-src 'self';" +
  "script-src-attr 'none';style-src 'self' https: 'unsafe-inline'";
const HELMET_POLICY = `${HELMET_POLICY_OVER_HTTP};upgrade-insecure-requests`;
/** The JSON routes' policy. */
const API_POLICY = "default-src 'none'; frame-ancestors 'none'";

const browser = useBrowser();

describe('Swagger UI over plain HTTP, at a host name other than localhost', () => {
  // Behind a proxy that says when the client used HTTPS.
  const fx = useApp({ env: { TRUST_PROXY: 'loopback' } });

  it('renders the API, with no request upgraded to https', async () => {
    const url = new URL('/api/docs', fx.url);
    url.hostname = DOCS_HOST;
    const p = await browser.openPage(url.toString());
    await p.locator('.swagger-ui .info .title').waitFor({ timeout: 10_000 });
    expect(await p.locator('.swagger-ui .info .title').textContent()).toContain(
      'Name history service',
    );
    await p.locator('.opblock-summary-path[data-path="/api/webhooks/prevnames/listen"]').waitFor();
    const paths = await p.locator('.opblock-summary-path').all();
    const listed = await Promise.all(paths.map((path) => path.getAttribute('data-path')));
    expect(listed).toEqual(
      expect.arrayContaining([
        '/api/users/{userId}/prevnames',
        '/api/webhooks/prevnames/listen',
        '/api/webhooks/prevnames',
      ]),
    );
    // Once each, though the stream has two tags (events, stream) in the published document.
    expect(listed.filter((path) => path === '/api/webhooks/prevnames/listen')).toHaveLength(1);
  });

  it('keeps the strict policy everywhere else, and on the docs over HTTPS', async () => {
    const policy = async (path: string, headers: Record<string, string> = {}) =>
      (await http(`${fx.url}${path}`, { headers })).headers.get('content-security-policy');
    expect(await policy('/api/docs')).toBe(HELMET_POLICY_OVER_HTTP);
    expect(await policy('/api/docs/swagger-ui-init.js')).toBe(HELMET_POLICY_OVER_HTTP);
    expect(await policy('/API/Docs')).toBe(HELMET_POLICY_OVER_HTTP);
    expect(await policy('/api/docs', { 'X-Forwarded-Proto': 'https' })).toBe(HELMET_POLICY);
    // The JSON routes: no document at all.
    expect(await policy('/api/users/someone/prevnames')).toBe(API_POLICY);
    expect(await policy('/api/health/live')).toBe(API_POLICY);
  });
});
