import { PUBLISH } from './support/api.js';
import { useApp, type TestApp } from './support/app.js';
import { nameEvent, uniqueUserId } from './support/events.js';
import { http, post } from './support/http.js';

const TOKEN = 'a-long-enough-publish-token';

/** The value of one sample line of the Prometheus text, e.g. `name{label="x"}`. */
function sample(metrics: string, series: string): number | undefined {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** What helmet sends on a document, and what the JSON routes send instead. */
const SECURITY_HEADERS = [
  'content-security-policy',
  'strict-transport-security',
  'x-content-type-options',
  'x-frame-options',
  'cross-origin-resource-policy',
  'referrer-policy',
  'cross-origin-opener-policy',
  'origin-agent-cluster',
  'x-dns-prefetch-control',
  'x-download-options',
  'x-permitted-cross-domain-policies',
  'x-xss-protection',
];

describe('operations and security', () => {
  const fx = useApp({
    env: {
      PUBLISH_TOKEN: TOKEN,
      CORS_ORIGINS: 'https://allowed.example, https://other.example',
    },
  });

  describe('PUBLISH_TOKEN', () => {
    it.each([
      ['no Authorization header', {}],
      ['a wrong token', { authorization: `Bearer ${TOKEN}x` }],
      ['another scheme', { authorization: `Basic ${TOKEN}` }],
    ])('answers 401 with %s, storing nothing', async (_case, headers) => {
      const body = nameEvent();
      const res = await fx.publish(body, headers);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Missing or invalid bearer token', code: 401 });
      expect(
        await fx.db.query('SELECT 1 FROM name_change_events WHERE user_id = $1', [body.userId]),
      ).toEqual([]);
    });

    it('accepts the right bearer token', async () => {
      const stream = await fx.listen();
      const res = await fx.publish(nameEvent(), { authorization: `Bearer ${TOKEN}` });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });
      await stream.untilEvents(1);
    });

    it('leaves the other routes open', async () => {
      expect((await fx.history(uniqueUserId())).status).toBe(200);
    });
  });

  describe('headers', () => {
    it('sends the API security headers on JSON routes, and none of the document ones', async () => {
      for (const path of ['/api/users/1/prevnames', '/api/health/live', '/api/nowhere']) {
        const res = await http(`${fx.url}${path}`);
        expect(
          Object.fromEntries(SECURITY_HEADERS.map((name) => [name, res.headers.get(name)])),
        ).toEqual({
          'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
          'strict-transport-security': 'max-age=31536000; includeSubDomains',
          'x-content-type-options': 'nosniff',
          'x-frame-options': 'DENY',
          'cross-origin-resource-policy': 'same-origin',
          'referrer-policy': 'no-referrer',
          'cross-origin-opener-policy': null,
          'origin-agent-cluster': null,
          'x-dns-prefetch-control': null,
          'x-download-options': null,
          'x-permitted-cross-domain-policies': null,
          'x-xss-protection': null,
        });
      }
      const res = await http(`${fx.url}/api/users/1/prevnames`);
      expect(res.headers.get('x-powered-by')).toBeNull();
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('sends none of them on the stream, which declares it is no JSON answer', async () => {
      const stream = await fx.listen();
      expect(stream.status).toBe(200);
      const none = Object.fromEntries(SECURITY_HEADERS.map((name) => [name, null]));
      expect(
        Object.fromEntries(SECURITY_HEADERS.map((name) => [name, stream.headers[name] ?? null])),
      ).toEqual(none);
    });

    it('echoes a sane X-Request-Id', async () => {
      const res = await http(`${fx.url}/api/users/1/prevnames`, {
        headers: { 'x-request-id': 'trace-42' },
      });
      expect(res.headers.get('x-request-id')).toBe('trace-42');
    });

    it('allows the configured origins, on JSON routes and on the stream', async () => {
      const json = await http(`${fx.url}/api/users/1/prevnames`, {
        headers: { origin: 'https://allowed.example' },
      });
      expect(json.headers.get('access-control-allow-origin')).toBe('https://allowed.example');
      const stream = await fx.listen('', { origin: 'https://other.example' });
      expect(stream.status).toBe(200);
      expect(stream.headers['access-control-allow-origin']).toBe('https://other.example');
      const preflight = await http(`${fx.url}${PUBLISH}`, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://allowed.example',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,authorization',
        },
      });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBe('https://allowed.example');
      expect(preflight.headers.get('access-control-allow-headers')).toBe(
        'Content-Type,Authorization,Last-Event-ID,X-Request-Id',
      );
    });

    it('gives other origins no CORS headers', async () => {
      const res = await http(`${fx.url}/api/users/1/prevnames`, {
        headers: { origin: 'https://evil.example' },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    });
  });

  describe('readiness and metrics', () => {
    it('reports the database and Redis in readiness', async () => {
      const ready = await http(`${fx.url}/api/health/ready`);
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({
        status: 'ok',
        details: { database: { status: 'up' }, redis: { status: 'up' } },
      });
    });

    it('exposes Prometheus metrics that follow what happens', async () => {
      await fx.untilNobodyListens();
      const before = (await http(`${fx.url}/api/metrics`)).text;
      expect(sample(before, 'name_history_sse_listeners')).toBe(0);
      expect(sample(before, 'name_history_dependency_up{dependency="postgres"}')).toBe(1);
      expect(sample(before, 'name_history_dependency_up{dependency="redis"}')).toBe(1);
      const stored = sample(before, 'name_history_events_stored_total') ?? 0;

      const stream = await fx.listen();
      const res = await fx.publish(nameEvent(), { authorization: `Bearer ${TOKEN}` });
      expect(res.status).toBe(200);
      await stream.untilEvents(1);
      const after = await http(`${fx.url}/api/metrics`);
      expect(after.status).toBe(200);
      expect(after.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(sample(after.text, 'name_history_sse_listeners')).toBe(1);
      expect(sample(after.text, 'name_history_events_stored_total')).toBe(stored + 1);
      expect(
        sample(after.text, 'name_history_publish_duration_seconds_count'),
      ).toBeGreaterThanOrEqual(1);
      expect(
        sample(after.text, 'name_history_publish_to_delivery_seconds_count'),
      ).toBeGreaterThanOrEqual(1);
      expect(after.text).toContain('process_resident_memory_bytes');
    });
  });
});

describe('the publish rate limit (PUBLISH_RATE_LIMIT), over two instances', () => {
  // Each test has instances of its own: the limit is counted in Redis under their prefix.
  const limits = { PUBLISH_RATE_LIMIT: '3', PUBLISH_RATE_WINDOW_MS: '60000' };

  describe('posting', () => {
    const fx = useApp({ env: limits });
    let limitedA: TestApp;
    let limitedB: TestApp;
    beforeAll(async () => {
      limitedA = fx.instance;
      limitedB = await fx.startInstance();
    });

    it('answers 429 with Retry-After past the limit, counted across instances', async () => {
      await fx.listen();
      const userId = uniqueUserId('limited');
      const statuses = [];
      for (const [i, target] of [limitedA, limitedB, limitedA].entries()) {
        statuses.push(
          (await post(`${target.url}${PUBLISH}`, nameEvent({ userId, name: `n${i}` }))).status,
        );
      }
      expect(statuses).toEqual([200, 200, 200]);
      const refused = await post(`${limitedB.url}${PUBLISH}`, nameEvent({ userId, name: 'n3' }));
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({
        message: 'Too many requests: the publish rate limit is exceeded',
        code: 429,
      });
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(
        await fx.db.query('SELECT name FROM name_change_events WHERE user_id = $1 ORDER BY id', [
          userId,
        ]),
      ).toEqual([{ name: 'n0' }, { name: 'n1' }, { name: 'n2' }]);
    });
  });

  describe('reading', () => {
    const fx = useApp({ env: limits });

    it('does not limit reads', async () => {
      await fx.listen();
      const userId = uniqueUserId('limited');
      for (let i = 0; i < 3; i++) {
        expect((await fx.publish(nameEvent({ userId, name: `n${i}` }))).status).toBe(200);
      }
      expect((await fx.publish(nameEvent({ userId, name: 'n3' }))).status).toBe(429);
      for (let i = 0; i < 5; i++) {
        expect((await fx.history(userId)).status).toBe(200);
      }
    });
  });
});

describe('readiness with Redis unreachable', () => {
  const fx = useApp({ backend: 'postgres', env: { REDIS_URL: 'redis://127.0.0.1:1' } });

  it('answers 503 naming Redis', async () => {
    const ready = await http(`${fx.url}/api/health/ready`);
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({ message: 'Not ready: redis unavailable', code: 503 });
  });

  it('keeps the history readable', async () => {
    const res = await http(`${fx.url}/api/users/1/prevnames`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ userId: '1', prevnames: [], code: 200 });
  });
});
