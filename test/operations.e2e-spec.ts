import { redisEnv, startApp, type TestApp, uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { http, post } from './support/http.js';
import { SseStream } from './support/sse.js';

const TOKEN = 'a-long-enough-publish-token';
const LISTEN = '/api/webhooks/prevnames/listen';
const PUBLISH = '/api/webhooks/prevnames';

function event(userId: string, name = 'old') {
  return { userId, type: 'username', name, changedAt: '2024-06-07T15:30:00.000Z' };
}

/** The value of one sample line of the Prometheus text, e.g. `name{label="x"}`. */
function sample(metrics: string, series: string): number | undefined {
  const line = metrics.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('operations and security', () => {
  let db: TestDatabase;
  let app: TestApp;
  let limitedA: TestApp;
  let limitedB: TestApp;

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp({
      ...redisEnv(db.url),
      PUBLISH_TOKEN: TOKEN,
      CORS_ORIGINS: 'https://allowed.example, https://other.example',
    });
    const shared = redisEnv(db.url, uniqueRedisPrefix());
    const limits = { PUBLISH_RATE_LIMIT: '3', PUBLISH_RATE_WINDOW_MS: '60000' };
    limitedA = await startApp({ ...shared, ...limits });
    limitedB = await startApp({ ...shared, ...limits });
  });

  afterAll(async () => {
    await Promise.all([app.close(), limitedA.close(), limitedB.close()]);
    await db.drop();
  });

  describe('PUBLISH_TOKEN', () => {
    it.each([
      ['no Authorization header', {}],
      ['a wrong token', { authorization: `Bearer ${TOKEN}x` }],
      ['another scheme', { authorization: `Basic ${TOKEN}` }],
    ])('answers 401 with %s, storing nothing', async (_case, headers) => {
      const res = await post(`${app.url}${PUBLISH}`, event('auth-refused'), headers);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Missing or invalid bearer token', code: 401 });
      expect(
        await db.query('SELECT 1 FROM name_change_events WHERE user_id = $1', ['auth-refused']),
      ).toEqual([]);
    });

    it('accepts the right bearer token', async () => {
      const stream = await SseStream.open(`${app.url}${LISTEN}`);
      const res = await post(`${app.url}${PUBLISH}`, event('auth-ok'), {
        authorization: `Bearer ${TOKEN}`,
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });
      await stream.untilEvents(1);
      stream.close();
    });

    it('leaves the other routes open', async () => {
      expect((await http(`${app.url}/api/users/auth-ok/prevnames`)).status).toBe(200);
    });
  });

  describe('headers', () => {
    it('sends helmet headers on JSON routes', async () => {
      const res = await http(`${app.url}/api/users/1/prevnames`);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
      expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(res.headers.get('x-powered-by')).toBeNull();
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('echoes a sane X-Request-Id', async () => {
      const res = await http(`${app.url}/api/users/1/prevnames`, {
        headers: { 'x-request-id': 'trace-42' },
      });
      expect(res.headers.get('x-request-id')).toBe('trace-42');
    });

    it('allows the configured origins, on JSON routes and on the stream', async () => {
      const json = await http(`${app.url}/api/users/1/prevnames`, {
        headers: { origin: 'https://allowed.example' },
      });
      expect(json.headers.get('access-control-allow-origin')).toBe('https://allowed.example');
      const stream = await SseStream.open(`${app.url}${LISTEN}`, {
        origin: 'https://other.example',
      });
      expect(stream.status).toBe(200);
      expect(stream.headers['access-control-allow-origin']).toBe('https://other.example');
      stream.close();
      const preflight = await http(`${app.url}${PUBLISH}`, {
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
      const res = await http(`${app.url}/api/users/1/prevnames`, {
        headers: { origin: 'https://evil.example' },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
    });
  });

  describe('publish rate limit', () => {
    it('answers 429 with Retry-After past the limit, counted across instances', async () => {
      const stream = await SseStream.open(`${limitedA.url}${LISTEN}`);
      const statuses = [];
      for (const [i, target] of [limitedA, limitedB, limitedA].entries()) {
        statuses.push((await post(`${target.url}${PUBLISH}`, event('limited', `n${i}`))).status);
      }
      expect(statuses).toEqual([200, 200, 200]);
      const refused = await post(`${limitedB.url}${PUBLISH}`, event('limited', 'n3'));
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({
        message: 'Too many requests: the publish rate limit is exceeded',
        code: 429,
      });
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(
        await db.query('SELECT name FROM name_change_events WHERE user_id = $1 ORDER BY id', [
          'limited',
        ]),
      ).toEqual([{ name: 'n0' }, { name: 'n1' }, { name: 'n2' }]);
      stream.close();
    });

    it('does not limit reads', async () => {
      for (let i = 0; i < 5; i++) {
        expect((await http(`${limitedB.url}/api/users/limited/prevnames`)).status).toBe(200);
      }
    });
  });

  describe('readiness and metrics', () => {
    it('reports the database and Redis in readiness', async () => {
      const ready = await http(`${app.url}/api/health/ready`);
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({
        status: 'ok',
        details: { database: { status: 'up' }, redis: { status: 'up' } },
      });
    });

    it('exposes Prometheus metrics that follow what happens', async () => {
      const before = (await http(`${app.url}/api/metrics`)).text;
      expect(sample(before, 'name_history_sse_listeners')).toBe(0);
      expect(sample(before, 'name_history_dependency_up{dependency="postgres"}')).toBe(1);
      expect(sample(before, 'name_history_dependency_up{dependency="redis"}')).toBe(1);
      const stored = sample(before, 'name_history_events_stored_total') ?? 0;

      const stream = await SseStream.open(`${app.url}${LISTEN}`);
      const res = await post(`${app.url}${PUBLISH}`, event('metrics'), {
        authorization: `Bearer ${TOKEN}`,
      });
      expect(res.status).toBe(200);
      await stream.untilEvents(1);
      const after = await http(`${app.url}/api/metrics`);
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
      stream.close();
    });
  });
});

describe('readiness with Redis unreachable', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp({ DATABASE_URL: db.url, REDIS_URL: 'redis://127.0.0.1:1' });
  });

  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  it('answers 503 naming Redis', async () => {
    const ready = await http(`${app.url}/api/health/ready`);
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({ message: 'Not ready: redis unavailable', code: 503 });
  });

  it('keeps the history readable', async () => {
    const res = await http(`${app.url}/api/users/1/prevnames`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ userId: '1', prevnames: [], code: 200 });
  });
});
