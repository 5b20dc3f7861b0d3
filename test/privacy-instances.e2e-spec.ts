import { Redis } from 'ioredis';
import { PUBLISHED } from './support/api.js';
import { uniqueRedisPrefix, useApp, type TestApp } from './support/app.js';
import { REDIS_URL } from './support/environment.js';
import { nameEvent, uniqueUserId, type NameEventBody } from './support/events.js';
import { http, post } from './support/http.js';
import { metric } from './support/metrics.js';
import { waitFor } from './support/ports.js';
import { admin, ADMIN_TOKEN, OPTED_OUT } from './support/privacy.js';

const PUBLISH = '/api/webhooks/prevnames';
const DAY_MS = 86_400_000;

function event(userId: string, name: string, changedAt = new Date()): NameEventBody {
  return nameEvent({ userId, name, changedAt: changedAt.toISOString() });
}

describe('privacy across two instances (one Postgres, one Redis)', () => {
  const fx = useApp({ env: { ADMIN_TOKEN } });
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    a = fx.instance;
    b = await fx.startInstance();
  });

  const listen = async (app: TestApp, query = '', headers: Record<string, string> = {}) => {
    const stream = await fx.listenTo(app, query, headers);
    expect(stream.status).toBe(200);
    await stream.until((s) => s.messages.length > 0);
    return stream;
  };

  it('an opt-out on A refuses a POST on B at once: nothing stored, nothing broadcast on either', async () => {
    const userId = uniqueUserId('opted');
    const onA = await listen(a);
    const onB = await listen(b);
    const before = event(userId, 'before');
    expect((await post(`${b.url}${PUBLISH}`, before)).body).toEqual(PUBLISHED);

    expect((await admin(a.url, 'PUT', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: true,
      code: 200,
    });
    expect((await admin(b.url, 'GET', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: true,
      code: 200,
    });
    const refused = await post(`${b.url}${PUBLISH}`, event(userId, 'refused'));
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual(OPTED_OUT);
    const sentinel = await fx.sentinel([onA, onB]);
    for (const stream of [onA, onB]) {
      expect(stream.events.map((e) => e.data)).toEqual([before, sentinel.data]);
    }
    expect(
      await fx.db.query('SELECT 1 FROM name_change_events WHERE user_id = $1', [userId]),
    ).toEqual([]);

    expect((await admin(b.url, 'DELETE', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: false,
      code: 200,
    });
    expect((await post(`${a.url}${PUBLISH}`, event(userId, 'again'))).body).toEqual(PUBLISHED);
  });

  it("an erasure on A is not replayed by B; the others' events are", async () => {
    const erased = uniqueUserId('erased');
    const other = uniqueUserId('other');
    const live = await listen(b);
    const startId = live.messages[0].id!;
    for (const [app, body] of [
      [a, event(erased, 'e1')],
      [b, event(other, 'o1')],
      [b, event(erased, 'e2')],
      [a, event(other, 'o2')],
    ] as const) {
      expect((await post(`${app.url}${PUBLISH}`, body)).body).toEqual(PUBLISHED);
    }
    await live.untilEvents(4);

    expect((await admin(a.url, 'DELETE', `${erased}/prevnames`)).body).toEqual({
      userId: erased,
      deleted: 2,
      code: 200,
    });
    const resumed = await listen(b, '', { 'Last-Event-ID': startId });
    await fx.sentinel([live, resumed], event(other, 'sentinel'));
    expect(resumed.events).toEqual(
      live.events.filter((e) => (e.data as NameEventBody).userId === other),
    );
    expect(resumed.events.map((e) => (e.data as NameEventBody).name)).toEqual([
      'o1',
      'o2',
      'sentinel',
    ]);
  });
});

describe('retention on two instances: one runs it at a time', () => {
  let redis: Redis;
  const prefix = uniqueRedisPrefix();
  const leaseKey = `{${prefix}:lease}:retention`;
  const SKIPPED = 'name_history_retention_runs_total{outcome="skipped"}';
  const DELETED = 'name_history_retention_deleted_total';

  beforeAll(async () => {
    redis = new Redis(REDIS_URL);
    // Someone else's run is under way before either instance starts: neither may start one.
    await redis.set(leaseKey, 'another-instance', 'PX', 60_000);
  });

  const fx = useApp({
    env: {
      REDIS_KEY_PREFIX: prefix,
      RETENTION_DAYS: '30',
      RETENTION_INTERVAL_MS: '100',
      RETENTION_BATCH_SIZE: '7',
    },
  });

  afterAll(async () => {
    await redis.del(leaseKey);
    await redis.quit();
  });

  const historyOf = async (app: TestApp, userId: string) =>
    (await http<{ prevnames: { name: string }[] }>(`${app.url}/api/users/${userId}/prevnames`)).body
      .prevnames;

  it('waits while another holds the lease, then one run deletes every old entry once', async () => {
    const first = fx.instance;
    const second = await fx.startInstance();
    const apps = [first, second];
    const total = async (series: string) =>
      (await Promise.all(apps.map((app) => metric(app.url, series)))).reduce((x, y) => x + y, 0);

    const userId = uniqueUserId('retained');
    await fx.listen(`?userId=${uniqueUserId('listener')}`);
    const old = Array.from({ length: 40 }, (_, i) =>
      event(userId, `old-${i}`, new Date(Date.now() - 31 * DAY_MS - i * 1000)),
    );
    const recent = [
      event(userId, 'recent', new Date(Date.now() - 29 * DAY_MS)),
      event(userId, 'now', new Date()),
    ];
    for (const [i, body] of [...old, ...recent].entries()) {
      expect((await post(`${apps[i % 2].url}${PUBLISH}`, body)).body).toEqual(PUBLISHED);
    }

    for (const app of apps) {
      const skipped = await metric(app.url, SKIPPED);
      await waitFor(
        'two more runs skipped on each instance',
        async () => (await metric(app.url, SKIPPED)) >= skipped + 2,
      );
    }
    expect(await historyOf(second, userId)).toHaveLength(42);
    expect(await total(DELETED)).toBe(0);

    await redis.del(leaseKey);
    await waitFor(
      'the old entries to be deleted',
      async () => (await historyOf(second, userId)).length === 2,
    );
    expect((await historyOf(first, userId)).map((e) => e.name)).toEqual(['recent', 'now']);
    // Each entry deleted once, whoever deleted it.
    expect(await total(DELETED)).toBe(40);
    expect(await total('name_history_retention_runs_total{outcome="failed"}')).toBe(0);
  });
});
