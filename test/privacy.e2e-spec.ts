import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { NameChangeEvent } from '../src/name-events/name-change-event.entity.js';
import { redisEnv, startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { http, post } from './support/http.js';
import { metric } from './support/metrics.js';
import { waitFor } from './support/ports.js';
import { ThrowawayRedis } from './support/redis-server.js';
import { opening, SseStream } from './support/sse.js';

const TOKEN = 'an-admin-token-for-the-privacy-tests';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const LISTEN = '/api/webhooks/prevnames/listen';
const PUBLISH = '/api/webhooks/prevnames';
const OPTED_OUT = { message: 'The user has opted out: their names are not recorded', code: 403 };

interface Body {
  userId: string;
  type: 'username' | 'displayname';
  name: string;
  changedAt: string;
}

let counter = 0;
/** A unique user id per call, so tests never see each other's history. */
function newUser(label: string): string {
  counter += 1;
  return `${label}-${counter}-${process.pid}`;
}

/** An event of `userId` named `name`, recent (no retention runs in this file anyway). */
function event(userId: string, name: string, seconds = counter): Body {
  return {
    userId,
    type: 'username',
    name,
    changedAt: new Date(Date.UTC(2025, 0, 1) + seconds * 1000).toISOString(),
  };
}

/** The bytes of one stream message. */
function frame(id: string, body: Body): string {
  return `id: ${id}\ndata: ${JSON.stringify(body)}\n\n`;
}

interface Shape {
  name: string;
  start(env: Record<string, string>): Promise<{ app: TestApp; cleanup(): Promise<void> }>;
}

const shapes: Shape[] = [
  {
    name: 'PostgreSQL and Redis',
    start: async (env) => {
      const db = await TestDatabase.create();
      const app = await startApp({ ...redisEnv(db.url), ...env });
      return { app, cleanup: () => db.drop() };
    },
  },
  {
    name: 'the embedded defaults (PGlite, in-process bus)',
    start: async (env) => {
      const dataDir = await mkdtemp(join(tmpdir(), 'privacy-e2e-'));
      const app = await startApp({ DATA_DIR: dataDir, ...env });
      return { app, cleanup: () => rm(dataDir, { recursive: true, force: true }) };
    },
  },
];

describe('the privacy routes with ADMIN_TOKEN unset', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp(redisEnv(db.url));
  });

  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  it.each([
    ['DELETE', '/api/users/someone/prevnames'],
    ['PUT', '/api/users/someone/opt-out'],
    ['DELETE', '/api/users/someone/opt-out'],
    ['GET', '/api/users/someone/opt-out'],
    ['GET', '/api/users/someone/opt-out?x=1'],
  ])('answers %s %s 404 like an unknown route, token or not', async (method, path) => {
    for (const headers of [{}, AUTH]) {
      const res = await http(`${app.url}${path}`, { method, headers });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(res.body).toEqual({ message: `Cannot ${method} ${path}`, code: 404 });
    }
    // The same shape as a route that does not exist at all.
    const unknown = await http(`${app.url}${path.replace('/api/users', '/api/userz')}`, { method });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({
      message: `Cannot ${method} ${path.replace('/api/users', '/api/userz')}`,
      code: 404,
    });
  });

  it('erases nothing, and leaves the history route as it was', async () => {
    const keeper = await SseStream.open(`${app.url}${LISTEN}`);
    const body = event('kept', 'still-here');
    expect((await post(`${app.url}${PUBLISH}`, body)).status).toBe(200);
    keeper.close();
    await http(`${app.url}/api/users/kept/prevnames`, { method: 'DELETE', headers: AUTH });
    const history = await http(`${app.url}/api/users/kept/prevnames`);
    expect(history.status).toBe(200);
    expect(history.body).toEqual({
      userId: 'kept',
      prevnames: [{ type: 'username', name: 'still-here', changedAt: body.changedAt }],
      code: 200,
    });
  });
});

describe.each(shapes)('erasure and opt-out on $name', (shape) => {
  let app: TestApp;
  let cleanup: () => Promise<void>;
  let keeper: SseStream;
  const streams: SseStream[] = [];

  const listen = async (query = '', headers: Record<string, string> = {}) => {
    const stream = await SseStream.open(`${app.url}${LISTEN}${query}`, headers);
    streams.push(stream);
    expect(stream.status).toBe(200);
    await stream.until((s) => s.messages.length > 0);
    return stream;
  };
  /** POSTs, expecting it delivered (the keeper listens throughout). */
  const publish = async (body: Body) => {
    const res = await post(`${app.url}${PUBLISH}`, body);
    expect(res.body).toEqual({ success: true });
    return res;
  };
  const admin = (method: string, path: string, headers: Record<string, string> = AUTH) =>
    http(`${app.url}/api/users/${path}`, { method, headers });
  const historyOf = async (userId: string) =>
    (await http<{ prevnames: unknown[] }>(`${app.url}/api/users/${userId}/prevnames`)).body
      .prevnames;

  beforeAll(async () => {
    ({ app, cleanup } = await shape.start({ ADMIN_TOKEN: TOKEN }));
    keeper = await SseStream.open(`${app.url}${LISTEN}?userId=nobody`);
  });

  afterEach(() => {
    for (const stream of streams.splice(0)) stream.close();
  });

  afterAll(async () => {
    keeper.close();
    await app.close();
    await cleanup();
  });

  it.each([
    ['no Authorization header', {}],
    ['a wrong token', { authorization: `Bearer ${TOKEN}x` }],
    ['a prefix of the token', { authorization: `Bearer ${TOKEN.slice(0, -1)}` }],
    ['another scheme', { authorization: `Basic ${TOKEN}` }],
    ['the scheme alone', { authorization: 'Bearer ' }],
  ])('answers 401 to %s, and does nothing', async (_case, headers) => {
    const userId = newUser('refused');
    await publish(event(userId, 'kept'));
    for (const [method, path] of [
      ['DELETE', `${userId}/prevnames`],
      ['PUT', `${userId}/opt-out`],
      ['DELETE', `${userId}/opt-out`],
      ['GET', `${userId}/opt-out`],
    ]) {
      const res = await admin(method, path, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(res.body).toEqual({ message: 'Missing or invalid bearer token', code: 401 });
    }
    expect(await historyOf(userId)).toHaveLength(1);
    expect((await publish(event(userId, 'still-recorded'))).status).toBe(200);
  });

  it('checks the token before the user id, and the user id as everywhere else', async () => {
    const tooLong = 'x'.repeat(65);
    expect((await admin('DELETE', `${tooLong}/prevnames`, {})).status).toBe(401);
    const res = await admin('DELETE', `${tooLong}/prevnames`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      message: 'userId must be between 1 and 64 characters long',
      code: 400,
    });
  });

  it("erases a user's whole history and nobody else's", async () => {
    const userId = newUser('erased');
    const other = newUser('other');
    for (const body of [
      event(userId, 'one'),
      event(other, 'theirs'),
      { ...event(userId, 'two'), type: 'displayname' as const },
      event(userId, 'three 🦊'),
    ]) {
      await publish(body);
    }
    const res = await admin('DELETE', `${userId}/prevnames`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({ userId, deleted: 3, code: 200 });
    expect(await historyOf(userId)).toEqual([]);
    expect(await historyOf(other)).toHaveLength(1);

    expect((await admin('DELETE', `${userId}/prevnames`)).body).toEqual({
      userId,
      deleted: 0,
      code: 200,
    });
    // Erasure is not an opt-out: recording goes on.
    const later = event(userId, 'later');
    await publish(later);
    expect(await historyOf(userId)).toEqual([
      { type: 'username', name: 'later', changedAt: later.changedAt },
    ]);
  });

  it("replays nothing of an erased user to a listener resuming from before the erasure, and everyone else's as before", async () => {
    const erased = newUser('erased');
    const other = newUser('other');
    const live = await listen();
    const startId = live.messages[0].id!;
    const bodies = [
      event(erased, 'e1'),
      event(other, 'o1'),
      event(erased, 'e2'),
      event(other, 'o2'),
      event(erased, 'e3'),
    ];
    for (const body of bodies) await publish(body);
    await live.untilEvents(5);
    const ids = new Map(live.events.map((e) => [(e.data as Body).name, e.id!]));

    expect((await admin('DELETE', `${erased}/prevnames`)).body).toEqual({
      userId: erased,
      deleted: 3,
      code: 200,
    });

    const byHeader = await listen('', { 'Last-Event-ID': startId });
    const byQuery = await listen(`?lastEventId=${startId}`);
    const ofErased = await listen(`?userId=${erased}&lastEventId=${startId}`);
    // A sentinel after the replay: anything replayed comes before it.
    const sentinel = event(erased, 'after-erasure');
    await publish(sentinel);
    await byHeader.untilEvents(3);
    await byQuery.untilEvents(3);
    await ofErased.untilEvents(1);
    await live.untilEvents(6);
    const sentinelId = live.events[5].id!;
    const replay = `${opening(startId)}${frame(ids.get('o1')!, bodies[1])}${frame(ids.get('o2')!, bodies[3])}${frame(sentinelId, sentinel)}`;
    expect(byHeader.raw).toBe(replay);
    expect(byQuery.raw).toBe(replay);
    expect(ofErased.raw).toBe(`${opening(startId)}${frame(sentinelId, sentinel)}`);
  });

  it('opts a user out: erased, refused with 403, nothing stored or broadcast; then back in', async () => {
    const userId = newUser('opted');
    const other = newUser('other');
    await publish(event(userId, 'before'));
    expect((await admin('GET', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: false,
      code: 200,
    });

    const optOut = await admin('PUT', `${userId}/opt-out`);
    expect(optOut.status).toBe(200);
    expect(optOut.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(optOut.body).toEqual({ userId, optedOut: true, code: 200 });
    expect(await historyOf(userId)).toEqual([]);
    expect((await admin('GET', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: true,
      code: 200,
    });

    const live = await listen();
    const refusedBefore = await metric(
      app.url,
      'name_history_events_refused_total{reason="opted_out"}',
    );
    const refused = await post(`${app.url}${PUBLISH}`, event(userId, 'refused'));
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(refused.body).toEqual(OPTED_OUT);
    const sentinel = event(other, 'sentinel');
    await publish(sentinel);
    await live.untilEvents(1);
    expect(live.events.map((e) => e.data)).toEqual([sentinel]);
    expect(await historyOf(userId)).toEqual([]);
    expect(await metric(app.url, 'name_history_events_refused_total{reason="opted_out"}')).toBe(
      refusedBefore + 1,
    );

    // Idempotent.
    expect((await admin('PUT', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: true,
      code: 200,
    });

    const optIn = await admin('DELETE', `${userId}/opt-out`);
    expect(optIn.status).toBe(200);
    expect(optIn.body).toEqual({ userId, optedOut: false, code: 200 });
    expect((await admin('GET', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: false,
      code: 200,
    });
    expect((await admin('DELETE', `${userId}/opt-out`)).body).toEqual({
      userId,
      optedOut: false,
      code: 200,
    });
    const resumed = event(userId, 'resumed');
    await publish(resumed);
    await live.untilEvents(2);
    expect(live.events[1].data).toEqual(resumed);
    expect(await historyOf(userId)).toEqual([
      { type: 'username', name: 'resumed', changedAt: resumed.changedAt },
    ]);
  });

  it('refuses only the opted-out users of a batch of concurrent publishes', async () => {
    const opted = newUser('opted');
    const others = [newUser('a'), newUser('b')];
    expect((await admin('PUT', `${opted}/opt-out`)).status).toBe(200);
    const bodies = Array.from({ length: 60 }, (_, i) =>
      event(i % 3 === 0 ? opted : others[i % 2], `n${i}`, i),
    );
    const statuses = await Promise.all(
      bodies.map(async (body) => (await post(`${app.url}${PUBLISH}`, body)).status),
    );
    expect(statuses).toEqual(bodies.map((b) => (b.userId === opted ? 403 : 200)));
    expect(await historyOf(opted)).toEqual([]);
    const stored = (await historyOf(others[0])).length + (await historyOf(others[1])).length;
    expect(stored).toBe(40);
  });

  it('counts erased entries in the metrics', async () => {
    const series = (reason: string) => `name_history_events_erased_total{reason="${reason}"}`;
    const before = [
      await metric(app.url, series('erasure')),
      await metric(app.url, series('opt_out')),
    ];
    const a = newUser('counted');
    const b = newUser('counted');
    for (const name of ['x', 'y']) await publish(event(a, name));
    for (const name of ['x', 'y', 'z']) await publish(event(b, name));
    await admin('DELETE', `${a}/prevnames`);
    await admin('PUT', `${b}/opt-out`);
    expect(await metric(app.url, series('erasure'))).toBe(before[0] + 2);
    expect(await metric(app.url, series('opt_out'))).toBe(before[1] + 3);
  });
});

describe('erasure and opt-out racing publishes (PostgreSQL and Redis)', () => {
  let db: TestDatabase;
  let app: TestApp;
  const streams: SseStream[] = [];

  const listen = async (query = '', headers: Record<string, string> = {}) => {
    const stream = await SseStream.open(`${app.url}${LISTEN}${query}`, headers);
    streams.push(stream);
    expect(stream.status).toBe(200);
    await stream.until((s) => s.messages.length > 0);
    return stream;
  };
  const admin = (method: string, path: string) =>
    http<{ deleted?: number }>(`${app.url}/api/users/${path}`, { method, headers: AUTH });
  const rows = (userId: string) =>
    db.query<{ id: string; name: string }>(
      `SELECT id::text AS id, name FROM name_change_events WHERE user_id = $1
        ORDER BY name_change_events.id`,
      [userId],
    );

  /**
   * Publishes for `userId` in three waves around `act`: the first wave is under way (some
   * answered) when `act` starts, the second starts with it, the third once it has answered.
   */
  async function race<T>(userId: string, act: () => Promise<T>) {
    let answered = 0;
    const wave = (label: string, count: number) =>
      Array.from({ length: count }, async (_, i) => {
        const body = event(userId, `${label}${i}`, i);
        const { status } = await post(`${app.url}${PUBLISH}`, body);
        answered += 1;
        return { name: body.name, status, answeredAt: answered };
      });
    const first = wave('a', 150);
    await waitUntil(() => answered >= 20);
    const answeredBefore = answered;
    const second = wave('b', 150);
    const result = await act();
    const third = wave('c', 20);
    const outcomes = await Promise.all([...first, ...second, ...third]);
    return { result, outcomes, answeredBefore };
  }

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp({ ...redisEnv(db.url), ADMIN_TOKEN: TOKEN });
  });

  afterEach(() => {
    for (const stream of streams.splice(0)) stream.close();
  });

  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  it.each([1, 2, 3])(
    'an erasure cuts the user’s events in two: all published before it are gone, all after it kept (round %i)',
    async () => {
      const userId = newUser('race-erase');
      const live = await listen(`?userId=${userId}`);
      const startId = live.messages[0].id!;
      const { result, outcomes, answeredBefore } = await race(userId, () =>
        admin('DELETE', `${userId}/prevnames`),
      );
      expect(outcomes.map((o) => o.status)).toEqual(outcomes.map(() => 200));
      await live.untilEvents(outcomes.length, 15_000);
      const delivered = live.events.map((e) => ({ id: e.id!, name: (e.data as Body).name }));
      expect(new Set(delivered.map((d) => d.name)).size).toBe(outcomes.length);

      const deleted = result.body.deleted!;
      expect(result.status).toBe(200);
      // Those answered before the erasure was asked for are erased; the third wave is kept.
      expect(deleted).toBeGreaterThanOrEqual(answeredBefore);
      const remaining = await rows(userId);
      expect(remaining).toEqual(delivered.slice(deleted));
      for (const o of outcomes.filter((o) => o.name.startsWith('c'))) {
        expect(remaining.map((r) => r.name)).toContain(o.name);
      }

      const replay = await listen(`?userId=${userId}`, { 'Last-Event-ID': startId });
      const sentinel = event(userId, 'sentinel');
      expect((await post(`${app.url}${PUBLISH}`, sentinel)).status).toBe(200);
      await live.untilEvents(outcomes.length + 1);
      const sentinelId = live.events.at(-1)!.id!;
      await replay.untilEvents(remaining.length + 1);
      expect(replay.events.map((e) => e.id)).toEqual([...remaining.map((r) => r.id), sentinelId]);
    },
  );

  it.each([1, 2, 3])(
    'an opt-out leaves nothing of the user, refuses what follows, and broadcast only what it answered 200 (round %i)',
    async () => {
      const userId = newUser('race-opt-out');
      const other = newUser('other');
      const live = await listen();
      const startId = live.messages[0].id!;
      const { result, outcomes, answeredBefore } = await race(userId, () =>
        admin('PUT', `${userId}/opt-out`),
      );
      expect(result.status).toBe(200);
      const accepted = outcomes.filter((o) => o.status === 200).map((o) => o.name);
      const refused = outcomes.filter((o) => o.status === 403).map((o) => o.name);
      expect(accepted.length + refused.length).toBe(outcomes.length);
      expect(accepted.length).toBeGreaterThanOrEqual(answeredBefore);
      for (const o of outcomes.filter((o) => o.name.startsWith('c'))) expect(o.status).toBe(403);
      expect(await rows(userId)).toEqual([]);

      const later = await post(`${app.url}${PUBLISH}`, event(userId, 'later'));
      expect(later.status).toBe(403);
      expect(later.body).toEqual(OPTED_OUT);

      const sentinel = event(other, 'sentinel');
      expect((await post(`${app.url}${PUBLISH}`, sentinel)).status).toBe(200);
      await live.until((s) => s.events.some((e) => (e.data as Body).userId === other), 15_000);
      const names = live.events
        .filter((e) => (e.data as Body).userId === userId)
        .map((e) => (e.data as Body).name);
      expect(names.sort()).toEqual([...accepted].sort());

      const replay = await listen('', { 'Last-Event-ID': startId });
      await replay.untilEvents(1);
      expect(replay.events.map((e) => e.data)).toEqual([sentinel]);
    },
  );
});

describe('an erasure waits for a publish under way (Redis paused between insert and broadcast)', () => {
  let redis: ThrowawayRedis;
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    redis = await ThrowawayRedis.start();
    db = await TestDatabase.create();
    app = await startApp({ ...redisEnv(db.url), REDIS_URL: redis.url, ADMIN_TOKEN: TOKEN });
  });

  afterAll(async () => {
    await app.close();
    await redis.kill();
    await db.drop();
  });

  it.each([
    ['DELETE', 'prevnames'],
    ['PUT', 'opt-out'],
  ])(
    '%s /users/:userId/%s answers only once the event stored before it was broadcast, then erases it',
    async (method, route) => {
      const userId = newUser('in-flight');
      const live = await SseStream.open(`${app.url}${LISTEN}`);
      await live.until((s) => s.messages.length > 0);
      const startId = live.messages[0].id!;
      const body = event(userId, 'in-flight');

      redis.pause();
      let erased: Awaited<ReturnType<typeof http>> | undefined;
      let published: Awaited<ReturnType<typeof http>> | undefined;
      try {
        const publishing = post(`${app.url}${PUBLISH}`, body).then((res) => (published = res));
        // Stored, and now waiting for Redis to take the broadcast.
        await waitFor('the event to be stored', async () => {
          const rows = await db.query('SELECT 1 FROM name_change_events WHERE user_id = $1', [
            userId,
          ]);
          return rows.length === 1;
        });
        const erasing = http(`${app.url}/api/users/${userId}/${route}`, {
          method,
          headers: AUTH,
        }).then((res) => (erased = res));
        await waitFor('the erasure to answer or to wait for the publish lock', async () => {
          if (erased) return true;
          const waiting = await db.query(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
          );
          return waiting.length > 0;
        });
        expect(erased).toBeUndefined();
        redis.resume();
        await Promise.all([publishing, erasing]);
      } finally {
        if (erased === undefined || published === undefined) redis.resume();
      }
      expect(published!.status).toBe(200);
      expect(erased!.status).toBe(200);
      expect(erased!.body).toEqual(
        route === 'prevnames'
          ? { userId, deleted: 1, code: 200 }
          : { userId, optedOut: true, code: 200 },
      );
      await live.untilEvents(1);
      expect(live.events.map((e) => e.data)).toEqual([body]);
      live.close();
      expect(
        await db.query('SELECT 1 FROM name_change_events WHERE user_id = $1', [userId]),
      ).toEqual([]);

      const resumed = await SseStream.open(`${app.url}${LISTEN}`, { 'Last-Event-ID': startId });
      const sentinel = event(newUser('sentinel'), 'sentinel');
      expect((await post(`${app.url}${PUBLISH}`, sentinel)).status).toBe(200);
      await resumed.untilEvents(1);
      expect(resumed.events.map((e) => e.data)).toEqual([sentinel]);
      resumed.close();
    },
  );
});

describe('erasing a user with 10,000 entries (PostgreSQL and Redis)', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp({ ...redisEnv(db.url), ADMIN_TOKEN: TOKEN });
  });

  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  it('deletes them all in one request, and measures how long it takes', async () => {
    const userId = newUser('prolific');
    const repository = app.app.get(DataSource).getRepository(NameChangeEvent);
    for (let chunk = 0; chunk < 10; chunk++) {
      await repository.insert(
        Array.from({ length: 1000 }, (_, i) => {
          const n = chunk * 1000 + i;
          return {
            userId,
            type: 'username' as const,
            name: `name-${n}`,
            changedAt: new Date(Date.UTC(2020, 0, 1) + n * 60_000),
          };
        }),
      );
    }
    await repository.insert({
      userId: 'bystander',
      type: 'username',
      name: 'kept',
      changedAt: new Date(Date.UTC(2020, 0, 1)),
    });

    const started = performance.now();
    const res = await http(`${app.url}/api/users/${userId}/prevnames`, {
      method: 'DELETE',
      headers: AUTH,
    });
    const elapsedMs = performance.now() - started;
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ userId, deleted: 10_000, code: 200 });
    expect(await db.query('SELECT 1 FROM name_change_events WHERE user_id = $1', [userId])).toEqual(
      [],
    );
    expect(await db.query<{ name: string }>('SELECT name FROM name_change_events', [])).toEqual([
      { name: 'kept' },
    ]);
    process.stdout.write(`Erasure of 10,000 entries: ${elapsedMs.toFixed(1)} ms over HTTP\n`);
  });
});

/** Polls a condition of the test's own state (no I/O), for the races above. */
async function waitUntil(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
