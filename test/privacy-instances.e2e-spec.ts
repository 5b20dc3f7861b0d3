import { Redis } from 'ioredis';
import { redisEnv, startApp, uniqueRedisPrefix, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { REDIS_URL } from './support/environment.js';
import { http, post } from './support/http.js';
import { metric } from './support/metrics.js';
import { waitFor } from './support/ports.js';
import { SseStream } from './support/sse.js';

const TOKEN = 'an-admin-token-for-two-instances';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const LISTEN = '/api/webhooks/prevnames/listen';
const PUBLISH = '/api/webhooks/prevnames';
const DAY_MS = 86_400_000;

interface Body {
  userId: string;
  type: 'username';
  name: string;
  changedAt: string;
}

let counter = 0;
function newUser(label: string): string {
  counter += 1;
  return `${label}-${counter}-${process.pid}`;
}

function event(userId: string, name: string, changedAt = new Date()): Body {
  return { userId, type: 'username', name, changedAt: changedAt.toISOString() };
}

describe('privacy across two instances (one Postgres, one Redis)', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  const streams: SseStream[] = [];

  const listen = async (app: TestApp, query = '', headers: Record<string, string> = {}) => {
    const stream = await SseStream.open(`${app.url}${LISTEN}${query}`, headers);
    streams.push(stream);
    expect(stream.status).toBe(200);
    await stream.until((s) => s.messages.length > 0);
    return stream;
  };
  const admin = (app: TestApp, method: string, path: string) =>
    http(`${app.url}/api/users/${path}`, { method, headers: AUTH });

  beforeAll(async () => {
    db = await TestDatabase.create();
    const env = { ...redisEnv(db.url), ADMIN_TOKEN: TOKEN };
    a = await startApp(env);
    b = await startApp(env);
  });

  afterEach(() => {
    for (const stream of streams.splice(0)) stream.close();
  });

  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
    await db.drop();
  });

  it('an opt-out on A refuses a POST on B at once: nothing stored, nothing broadcast on either', async () => {
    const userId = newUser('opted');
    const onA = await listen(a);
    const onB = await listen(b);
    expect((await post(`${b.url}${PUBLISH}`, event(userId, 'before'))).status).toBe(200);

    expect((await admin(a, 'PUT', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: true,
      code: 200,
    });
    expect((await admin(b, 'GET', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: true,
      code: 200,
    });
    const refused = await post(`${b.url}${PUBLISH}`, event(userId, 'refused'));
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      message: 'The user has opted out: their names are not recorded',
      code: 403,
    });
    const sentinel = event(newUser('sentinel'), 'sentinel');
    expect((await post(`${b.url}${PUBLISH}`, sentinel)).status).toBe(200);
    for (const stream of [onA, onB]) {
      await stream.untilEvents(2);
      expect(stream.events.map((e) => (e.data as Body).name)).toEqual(['before', 'sentinel']);
    }
    expect(await db.query('SELECT 1 FROM name_change_events WHERE user_id = $1', [userId])).toEqual(
      [],
    );

    expect((await admin(b, 'DELETE', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: false,
      code: 200,
    });
    expect((await post(`${a.url}${PUBLISH}`, event(userId, 'again'))).status).toBe(200);
  });

  it("an erasure on A is not replayed by B; the others' events are", async () => {
    const erased = newUser('erased');
    const other = newUser('other');
    const live = await listen(b);
    const startId = live.messages[0].id!;
    for (const [app, body] of [
      [a, event(erased, 'e1')],
      [b, event(other, 'o1')],
      [b, event(erased, 'e2')],
      [a, event(other, 'o2')],
    ] as const) {
      expect((await post(`${app.url}${PUBLISH}`, body)).status).toBe(200);
    }
    await live.untilEvents(4);

    expect((await admin(a, 'DELETE', `${erased}/prevnames`)).body).toEqual({
      userId: erased,
      deleted: 2,
      code: 200,
    });
    const resumed = await listen(b, '', { 'Last-Event-ID': startId });
    const sentinel = event(other, 'sentinel');
    expect((await post(`${a.url}${PUBLISH}`, sentinel)).status).toBe(200);
    await resumed.untilEvents(3);
    await live.untilEvents(5);
    expect(resumed.events).toEqual(live.events.filter((e) => (e.data as Body).userId === other));
    expect(resumed.events.map((e) => (e.data as Body).name)).toEqual(['o1', 'o2', 'sentinel']);
  });
});

describe('retention on two instances: one runs it at a time', () => {
  let db: TestDatabase;
  let redis: Redis;
  const apps: TestApp[] = [];
  const prefix = uniqueRedisPrefix();
  const leaseKey = `${prefix}:retention:lease`;

  const historyOf = async (app: TestApp, userId: string) =>
    (await http<{ prevnames: { name: string }[] }>(`${app.url}/api/users/${userId}/prevnames`)).body
      .prevnames;
  const total = async (series: string) =>
    (await Promise.all(apps.map((app) => metric(app.url, series)))).reduce((x, y) => x + y, 0);

  beforeAll(async () => {
    db = await TestDatabase.create();
    redis = new Redis(REDIS_URL);
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await redis.quit();
    await db.drop();
  });

  it('waits while another holds the lease, then one run deletes every old entry once', async () => {
    // Someone else's run is under way: neither instance may start one.
    await redis.set(leaseKey, 'another-instance', 'PX', 60_000);
    const env = {
      ...redisEnv(db.url, prefix),
      RETENTION_DAYS: '30',
      RETENTION_INTERVAL_MS: '100',
      RETENTION_BATCH_SIZE: '7',
    };
    apps.push(await startApp(env), await startApp(env));
    const [first, second] = apps;

    const userId = newUser('retained');
    const keeper = await SseStream.open(`${first.url}${LISTEN}?userId=nobody`);
    const old = Array.from({ length: 40 }, (_, i) =>
      event(userId, `old-${i}`, new Date(Date.now() - 31 * DAY_MS - i * 1000)),
    );
    const recent = [
      event(userId, 'recent', new Date(Date.now() - 29 * DAY_MS)),
      event(userId, 'now', new Date()),
    ];
    for (const [i, body] of [...old, ...recent].entries()) {
      expect((await post(`${apps[i % 2].url}${PUBLISH}`, body)).status).toBe(200);
    }
    keeper.close();

    for (const app of apps) {
      const skipped = await metric(app.url, 'name_history_retention_runs_total{outcome="skipped"}');
      await waitFor('two more runs skipped on each instance', async () => {
        const now = await metric(app.url, 'name_history_retention_runs_total{outcome="skipped"}');
        return now >= skipped + 2;
      });
    }
    expect(await historyOf(second, userId)).toHaveLength(42);
    expect(await total('name_history_retention_deleted_total')).toBe(0);

    await redis.del(leaseKey);
    await waitFor('the old entries to be deleted', async () => {
      return (await historyOf(second, userId)).length === 2;
    });
    expect((await historyOf(first, userId)).map((e) => e.name)).toEqual(['recent', 'now']);
    // Each entry deleted once, whoever deleted it.
    expect(await total('name_history_retention_deleted_total')).toBe(40);
    expect(await total('name_history_retention_runs_total{outcome="failed"}')).toBe(0);
  });
});
