import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import pg from 'pg';
import { EventStreamService } from '../src/events/event-stream.service.js';
import { redisEnv, startApp, type TestApp } from './support/app.js';
import { REDIS_URL } from './support/environment.js';
import { TestDatabase } from './support/database.js';
import { http, post } from './support/http.js';
import { waitFor } from './support/ports.js';
import { spyOnProcessFailures, type ProcessSpies } from './support/process-spies.js';
import { ThrowawayRedis } from './support/redis-server.js';
import { opening, settle, SseStream } from './support/sse.js';
import { TcpProxy } from './support/tcp-proxy.js';

const LISTEN = '/api/webhooks/prevnames/listen';
const PUBLISH = '/api/webhooks/prevnames';

const BUS_DOWN = { message: 'Failed to deliver event: event bus unavailable', code: 500 };
const STORAGE_DOWN = { message: 'Failed to deliver event: storage unavailable', code: 500 };
const STREAM_FAILED = { message: 'Error establishing the event stream connection', code: 500 };
const INTERNAL = { message: 'Internal server error', code: 500 };

interface Body {
  userId: string;
  type: 'username' | 'displayname';
  name: string;
  changedAt: string;
}

/** Events of one user, numbered, one second apart. */
function eventsOf(userId: string) {
  let n = 0;
  return (): Body => {
    n += 1;
    return {
      userId,
      type: n % 2 ? 'username' : 'displayname',
      name: `name-${n}`,
      changedAt: new Date(Date.UTC(2024, 0, 1, 0, 0, n)).toISOString(),
    };
  };
}

function uniqueUser(): string {
  return `faults-${randomBytes(4).toString('hex')}`;
}

/** The JSON an event is streamed as: exactly the four fields. */
function streamed(body: Body) {
  return {
    userId: body.userId,
    type: body.type,
    name: body.name,
    changedAt: body.changedAt,
  };
}

/** The stream's events as [id, data], checked to be strictly increasing by id. */
function inOrder(stream: SseStream) {
  const ids = stream.events.map((e) => BigInt(e.id!));
  for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]);
  return stream.events.map((e) => e.data);
}

/** Opens streams on the describe's app (read when called), and closes every one it opened. */
function streamsOf(appOf: () => TestApp) {
  const streams: SseStream[] = [];
  return {
    listen: async (query = '', headers: Record<string, string> = {}) => {
      const stream = await SseStream.open(`${appOf().url}${LISTEN}${query}`, headers);
      streams.push(stream);
      return stream;
    },
    closeStreams: () => {
      for (const stream of streams.splice(0)) stream.close();
    },
  };
}

describe('faults: Redis down, hung, and back (a throwaway redis-server: killed, stopped, restarted)', () => {
  let redis: ThrowawayRedis;
  let db: TestDatabase;
  let app: TestApp;
  let spies: ProcessSpies;
  const { listen, closeStreams } = streamsOf(() => app);
  const listeners = () => app.app.get(EventStreamService).listenerCount;
  /** A stream of everyone's events, once Redis answers (a listen gets 500 until then). */
  const listenWhenUp = () =>
    waitFor('a listen to succeed with Redis up', async () => {
      const stream = await listen();
      if (stream.status === 200) return stream;
      stream.close();
      return undefined;
    });
  const storedIds = async (userId: string) =>
    (
      await db.query<{ id: string }>(
        'SELECT id::text AS id FROM name_change_events WHERE user_id = $1 ORDER BY name_change_events.id',
        [userId],
      )
    ).map((row) => row.id);

  beforeAll(async () => {
    spies = spyOnProcessFailures();
    redis = await ThrowawayRedis.start();
    db = await TestDatabase.create();
    app = await startApp({ ...redisEnv(db.url), REDIS_URL: redis.url });
  });

  afterEach(closeStreams);

  afterAll(async () => {
    spies?.stop();
    await app?.close();
    await redis?.kill();
    await db?.drop();
  });

  it('survives three outages: stores, answers the contract 500s, ends streams, then resumes by itself with nothing lost', async () => {
    const userId = uniqueUser();
    const next = eventsOf(userId);
    const published: Body[] = [];

    let everyone = await listen();
    let mine = await listen(`?userId=${userId}`);
    expect([everyone.status, mine.status]).toEqual([200, 200]);
    const first = next();
    expect((await post(`${app.url}${PUBLISH}`, first)).body).toEqual({ success: true });
    published.push(first);
    await everyone.untilEvents(1);
    await mine.untilEvents(1);

    for (let outage = 1; outage <= 3; outage++) {
      const lastSeen = everyone.events.at(-1)!.id!;
      const lastSeenMine = mine.events.at(-1)!.id!;
      expect(listeners()).toBe(2);

      await redis.kill();

      // Open streams end cleanly (a complete chunked response, whole messages only).
      await everyone.until((s) => s.ended, 10_000);
      await mine.until((s) => s.ended, 10_000);
      for (const stream of [everyone, mine]) {
        expect(stream.response.complete).toBe(true);
        expect(stream.raw.endsWith('\n\n')).toBe(true);
      }
      await waitFor('the listener count to drop to 0', () => listeners() === 0);

      // A POST is stored, then answered with the contract's 500.
      const during = [next(), next(), next()];
      for (const body of during) {
        const res = await post(`${app.url}${PUBLISH}`, body);
        expect(res.status).toBe(500);
        expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
        expect(res.body).toEqual(BUS_DOWN);
        published.push(body);
      }
      expect(await storedIds(userId)).toHaveLength(published.length);

      // A new listen is refused with the contract's 500, before any stream byte.
      const refused = await listen();
      expect(refused.status).toBe(500);
      expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(JSON.parse(await refused.body())).toEqual(STREAM_FAILED);
      expect(listeners()).toBe(0);

      // Readiness says why; liveness holds (nothing to restart).
      const ready = await http(`${app.url}/api/health/ready`);
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({ message: 'Not ready: redis unavailable', code: 503 });
      expect((await http(`${app.url}/api/health/live`)).status).toBe(200);

      // The history does not need Redis.
      const history = await http<{ prevnames: unknown[] }>(
        `${app.url}/api/users/${userId}/prevnames`,
      );
      expect(history.status).toBe(200);
      expect(history.body.prevnames).toHaveLength(published.length);

      await redis.restart();

      // The instance subscribes again by itself: a new listen works, with no restart. The
      // reconnecting listeners replay what was stored meanwhile, exactly once, in order.
      everyone = await waitFor('a listen to succeed after Redis is back', async () => {
        const stream = await listen('', { 'Last-Event-ID': lastSeen });
        if (stream.status === 200) return stream;
        expect(JSON.parse(await stream.body())).toEqual(STREAM_FAILED);
        return undefined;
      });
      mine = await listen(`?userId=${userId}&lastEventId=${lastSeenMine}`);
      expect(mine.status).toBe(200);
      await everyone.untilEvents(during.length);
      await mine.untilEvents(during.length);

      // The publisher connection may come back a moment after the subscriber: a client
      // retries a 500 (a repeat is stored once and re-sent with its original id).
      const after = next();
      await waitFor('a POST to succeed after Redis is back', async () => {
        const res = await post(`${app.url}${PUBLISH}`, after);
        if (res.status === 200) return true;
        expect(res.body).toEqual(BUS_DOWN);
        return false;
      });
      published.push(after);
      expect((await http(`${app.url}/api/health/ready`)).status).toBe(200);
      await everyone.untilEvents(during.length + 1);
      await mine.untilEvents(during.length + 1);
      await settle(100);
      expect(inOrder(everyone)).toEqual([...during, after].map(streamed));
      expect(inOrder(mine)).toEqual([...during, after].map(streamed));
    }

    // Every accepted event is stored once, in order, and none was lost.
    const ids = await storedIds(userId);
    expect(ids).toHaveLength(published.length);
    const history = await http<{ prevnames: unknown[] }>(
      `${app.url}/api/users/${userId}/prevnames`,
    );
    expect(history.body.prevnames).toEqual(
      published.map(({ type, name, changedAt }) => ({ type, name, changedAt })),
    );
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  });

  it('answers a listen still being set up when Redis drops with the contract 500, not an empty 200', async () => {
    const live = await listenWhenUp();
    // Hold the replay query of a second listen: it is then counted, but not streaming yet.
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE name_change_events IN ACCESS EXCLUSIVE MODE');
      const opening = listen('', { 'Last-Event-ID': '0' });
      await waitFor('the replay query to wait on the lock', async () => {
        const { rows } = await locker.query<{ waiting: number }>(
          `SELECT count(*)::int AS waiting FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        );
        return rows[0].waiting === 1;
      });
      expect(listeners()).toBe(2);

      await redis.kill();
      await live.until((s) => s.ended, 10_000);
      await locker.query('COMMIT');

      const refused = await opening;
      expect(refused.status).toBe(500);
      expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(JSON.parse(await refused.body())).toEqual(STREAM_FAILED);
      await waitFor('the listener count to drop to 0', () => listeners() === 0);
    } finally {
      await locker.end();
      if (!redis.running) await redis.restart();
    }
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  });

  it('keeps the connection it opened after Redis died with a heartbeat unanswered', async () => {
    const first = await listenWhenUp();
    // Stopped, Redis leaves the subscriber's next heartbeat PING (every 2 s) unanswered...
    const pausedAt = Date.now();
    redis.pause();
    await settle(2_500);
    // ...and dies with it outstanding. The instance reconnects as soon as Redis is back.
    await redis.kill();
    await first.until((s) => s.ended, 10_000);
    await redis.restart();
    const stream = await listenWhenUp();

    // The dead socket's 5 s response timeout has passed: the new connection is still up.
    await settle(Math.max(0, pausedAt + 8_000 - Date.now()));
    expect(stream.ended).toBe(false);
    expect(listeners()).toBe(1);
    const body = eventsOf(uniqueUser())();
    expect((await post(`${app.url}${PUBLISH}`, body)).body).toEqual({ success: true });
    await stream.untilEvents(1);
    expect(stream.events.map((e) => e.data)).toEqual([streamed(body)]);
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  });

  it('answers a POST in flight when Redis dies, and the retry reaches the listeners', async () => {
    await listenWhenUp();
    const userId = uniqueUser();
    const next = eventsOf(userId);
    const watcher = await listen(`?userId=${userId}`);
    expect(watcher.status).toBe(200);

    // A burst of POSTs, with Redis killed in the middle of it: each one gets a full answer,
    // 200 or the contract's 500, and none hangs.
    const bodies = Array.from({ length: 40 }, () => next());
    const answers = bodies.map((body) => post(`${app.url}${PUBLISH}`, body));
    await watcher.untilEvents(5, 10_000);
    await redis.kill();
    const results = await Promise.all(answers);
    for (const res of results) {
      if (res.status !== 200) expect(res.body).toEqual(BUS_DOWN);
    }
    expect(await storedIds(userId)).toHaveLength(bodies.length);
    await watcher.until((s) => s.ended, 10_000);

    await redis.restart();
    const resumed = await waitFor('a listen after Redis is back', async () => {
      const stream = await listen(`?userId=${userId}`, {
        'Last-Event-ID': watcher.events.at(-1)?.id ?? '0',
      });
      if (stream.status === 200) return stream;
      stream.close();
      return undefined;
    });
    // Retrying every POST that failed delivers it; the listener dedupes by id.
    for (const [i, res] of results.entries()) {
      if (res.status === 200) continue;
      await waitFor('a retried POST to succeed', async () => {
        return (await post(`${app.url}${PUBLISH}`, bodies[i])).status === 200;
      });
    }
    const seen = new Map<string, unknown>();
    for (const e of [...watcher.events, ...resumed.events]) seen.set(e.id!, e.data);
    await waitFor('every event to reach the listener', () => {
      for (const e of resumed.events) seen.set(e.id!, e.data);
      return seen.size === bodies.length;
    });
    expect(
      [...seen.values()].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    ).toEqual(
      bodies.map(streamed).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    );
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  });

  it('answers a POST with the contract 500 when Redis hangs (SIGSTOP), ends the streams, and recovers with nothing lost', async () => {
    const userId = uniqueUser();
    const next = eventsOf(userId);
    const [before, during, after] = [next(), next(), next()];
    const watcher = await listen(`?userId=${userId}`);
    expect(watcher.status).toBe(200);
    expect((await post(`${app.url}${PUBLISH}`, before)).status).toBe(200);
    await watcher.untilEvents(1);

    redis.pause();
    // Within the Redis response timeout (5 s): a 500, with the event stored all the same.
    const res = await post(`${app.url}${PUBLISH}`, during);
    expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: BUS_DOWN });
    expect(await storedIds(userId)).toHaveLength(2);
    // The silent subscription is noticed and the stream ends, so its client reconnects...
    await watcher.until((s) => s.ended, 15_000);
    const refused = await listen();
    expect({ status: refused.status, body: JSON.parse(await refused.body()) }).toEqual({
      status: 500,
      body: STREAM_FAILED,
    });

    // ...and once Redis answers again, it resumes with what it missed, then goes on live.
    redis.resume();
    const resumed = await waitFor('a listen after Redis answers again', async () => {
      const stream = await listen(`?userId=${userId}`, {
        'Last-Event-ID': watcher.events[0].id!,
      });
      if (stream.status === 200) return stream;
      stream.close();
      return undefined;
    });
    await waitFor('a POST to succeed again', async () => {
      return (await post(`${app.url}${PUBLISH}`, after)).status === 200;
    });
    await resumed.untilEvents(2);
    await settle(200);
    expect(watcher.events.map((e) => e.data)).toEqual([streamed(before)]);
    expect(inOrder(resumed)).toEqual([streamed(during), streamed(after)]);
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  }, 60_000);
});

describe('faults: a Redis connection still being opened (a TCP proxy in front of Redis holds its handshake)', () => {
  let proxy: TcpProxy;
  let db: TestDatabase;
  let app: TestApp;
  let spies: ProcessSpies;
  const { listen, closeStreams } = streamsOf(() => app);

  beforeAll(async () => {
    spies = spyOnProcessFailures();
    const redis = new URL(REDIS_URL);
    proxy = await TcpProxy.start({ host: redis.hostname, port: Number(redis.port || 6379) });
    db = await TestDatabase.create();
    app = await startApp({ ...redisEnv(db.url), REDIS_URL: `redis://127.0.0.1:${proxy.port}` });
  });

  afterAll(async () => {
    closeStreams();
    spies?.stop();
    await app?.close();
    await proxy?.close();
    await db?.drop();
  });

  it('answers a listen that arrives before the new connection is ready with the contract 500, and keeps that connection', async () => {
    const first = await listen();
    expect(first.status).toBe(200);
    expect(proxy.forwarded).toBe(2);

    // Both connections drop; their replacements connect, and the proxy holds what they send.
    // A SUBSCRIBE written now, before ioredis's ready check (Redis allows SUBSCRIBE while
    // loading), would put the connection in subscriber mode: the ready check's INFO would be
    // refused, and ioredis would drop the connection it had just opened.
    proxy.stall();
    proxy.drop();
    await first.until((s) => s.ended, 10_000);
    await waitFor(
      'both Redis connections to be opened again and held',
      () => proxy.heldCount === 2,
    );
    const opening = listen('', { 'Last-Event-ID': first.events.at(-1)?.id ?? '0' });
    await Promise.race([opening, settle(300)]);
    proxy.restore();
    const refused = await opening;
    expect(refused.status).toBe(500);
    expect(JSON.parse(await refused.body())).toEqual(STREAM_FAILED);

    // Once the connection is ready, a listen subscribes, and the connection stays: no third one.
    const stream = await waitFor('a listen to succeed once Redis answers', async () => {
      const attempt = await listen();
      if (attempt.status === 200) return attempt;
      attempt.close();
      return undefined;
    });
    await settle(500);
    expect(stream.ended).toBe(false);
    expect(proxy.forwarded).toBe(4);
    expect(app.app.get(EventStreamService).listenerCount).toBe(1);
    const body = eventsOf(uniqueUser())();
    expect((await post(`${app.url}${PUBLISH}`, body)).body).toEqual({ success: true });
    await stream.untilEvents(1);
    expect(stream.events.map((e) => e.data)).toEqual([streamed(body)]);
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  });
});

describe('faults: Postgres down and back (a TCP proxy in front of it, cut and restored)', () => {
  let proxy: TcpProxy;
  let db: TestDatabase;
  let app: TestApp;
  let spies: ProcessSpies;
  const { listen, closeStreams } = streamsOf(() => app);
  const storedNames = async (userId: string) =>
    (
      await db.query<{ name: string }>(
        'SELECT name FROM name_change_events WHERE user_id = $1 ORDER BY name_change_events.id',
        [userId],
      )
    ).map((row) => row.name);

  beforeAll(async () => {
    spies = spyOnProcessFailures();
    db = await TestDatabase.create();
    const direct = new URL(db.url);
    proxy = await TcpProxy.start({ host: direct.hostname, port: Number(direct.port || 5432) });
    const viaProxy = new URL(db.url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    app = await startApp(redisEnv(viaProxy.toString()));
  });

  afterEach(closeStreams);

  afterAll(async () => {
    spies?.stop();
    await app?.close();
    await proxy?.close();
    await db?.drop();
  });

  it('answers the contract 500s and 503 while it is down, broadcasts nothing, and recovers without a restart', async () => {
    const userId = uniqueUser();
    const next = eventsOf(userId);
    const watcher = await listen();
    expect(watcher.status).toBe(200);
    const before = next();
    expect((await post(`${app.url}${PUBLISH}`, before)).status).toBe(200);
    await watcher.untilEvents(1);
    const lastSeen = watcher.events[0].id!;
    const accepted: Body[] = [before];

    for (let outage = 1; outage <= 3; outage++) {
      proxy.cut();

      const history = await http(`${app.url}/api/users/${userId}/prevnames`);
      expect(history.status).toBe(500);
      expect(history.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(history.body).toEqual(INTERNAL);

      const lost = next();
      const res = await post(`${app.url}${PUBLISH}`, lost);
      expect(res.status).toBe(500);
      expect(res.body).toEqual(STORAGE_DOWN);

      const ready = await http(`${app.url}/api/health/ready`);
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({ message: 'Not ready: database unavailable', code: 503 });
      expect((await http(`${app.url}/api/health/live`)).status).toBe(200);

      // A replaying listen needs the database: refused. A live-only one does not.
      const replaying = await listen('', { 'Last-Event-ID': lastSeen });
      expect(replaying.status).toBe(500);
      expect(JSON.parse(await replaying.body())).toEqual(STREAM_FAILED);
      const live = await listen();
      expect(live.status).toBe(200);
      live.close();

      proxy.restore();

      await waitFor('the history to answer again', async () => {
        const again = await http(`${app.url}/api/users/${userId}/prevnames`);
        if (again.status === 200) return true;
        expect(again.body).toEqual(INTERNAL);
        return false;
      });
      expect((await http(`${app.url}/api/health/ready`)).status).toBe(200);
      const after = next();
      expect((await post(`${app.url}${PUBLISH}`, after)).body).toEqual({ success: true });
      accepted.push(after);
      // The next event the watcher sees is the one after the outage: the refused one was
      // never broadcast (ordering holds on one stream).
      await watcher.untilEvents(accepted.length);
      await settle(100);
      expect(inOrder(watcher)).toEqual(accepted.map(streamed));
      expect(await storedNames(userId)).toEqual(accepted.map((b) => b.name));
    }

    const history = await http(`${app.url}/api/users/${userId}/prevnames`);
    expect(history.body).toEqual({
      userId,
      prevnames: accepted.map(({ type, name, changedAt }) => ({ type, name, changedAt })),
      code: 200,
    });
    expect(proxy.forwarded).toBeGreaterThan(1);
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  });

  it('answers while Postgres hangs: the contract 500s, and a new stream opens without its starting id', async () => {
    const userId = uniqueUser();
    const next = eventsOf(userId);
    const watcher = await listen(`?userId=${userId}`);
    expect(watcher.status).toBe(200);
    const accepted = [next()];
    expect((await post(`${app.url}${PUBLISH}`, accepted[0])).body).toEqual({ success: true });
    await watcher.untilEvents(1);

    proxy.stall();
    // A live-only stream reads its starting id as a best effort: it opens without it, after
    // the service's 2 s wait, well before the database's own timeouts (5 s for a connection,
    // 11 s for a query on an open one, as here) would end the wait.
    const pendingOpen = listen();
    const opened = await Promise.race([
      pendingOpen,
      settle(8_000).then(() => 'still waiting after 8 s' as const),
    ]);
    expect(opened).not.toBe('still waiting after 8 s');
    const live = await pendingOpen;
    expect(live.status).toBe(200);
    await live.until((s) => s.raw.length > 0);
    expect(live.raw).toBe(opening(''));
    live.close();
    const [published, history] = await Promise.all([
      post(`${app.url}${PUBLISH}`, next()),
      http(`${app.url}/api/users/${userId}/prevnames`),
    ]);
    expect({ status: published.status, body: published.body }).toEqual({
      status: 500,
      body: STORAGE_DOWN,
    });
    expect({ status: history.status, body: history.body }).toEqual({ status: 500, body: INTERNAL });

    proxy.restore();
    const after = next();
    await waitFor('a POST to succeed again', async () => {
      return (await post(`${app.url}${PUBLISH}`, after)).status === 200;
    });
    accepted.push(after);
    await watcher.untilEvents(2);
    await settle(100);
    expect(inOrder(watcher)).toEqual(accepted.map(streamed));
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  }, 60_000);

  it('answers every POST in flight when Postgres drops, and retries store each event once', async () => {
    const userId = uniqueUser();
    const next = eventsOf(userId);
    const watcher = await listen(`?userId=${userId}`);
    expect(watcher.status).toBe(200);

    const bodies = Array.from({ length: 40 }, () => next());
    const before = [];
    for (const body of bodies.slice(0, 5)) before.push(await post(`${app.url}${PUBLISH}`, body));
    await watcher.untilEvents(5, 10_000);
    // The rest reach the service while Postgres hangs, and are in flight when it drops.
    proxy.stall();
    let received = 0;
    const server = app.app.getHttpServer() as Server;
    const count = () => received++;
    server.on('request', count);
    const during = bodies.slice(5).map((body) => post(`${app.url}${PUBLISH}`, body));
    await waitFor('every POST to reach the service', () => received === during.length);
    server.off('request', count);
    proxy.cut();
    const results = [...before, ...(await Promise.all(during))];
    const failed = results.flatMap((res, i) => (res.status === 200 ? [] : [i]));
    for (const i of failed) expect(results[i].body).toEqual(STORAGE_DOWN);
    expect(failed.length).toBeGreaterThan(0);
    // Whatever was answered 200 was broadcast; what failed was not.
    await watcher.untilEvents(bodies.length - failed.length);
    await settle(100);
    expect(watcher.events).toHaveLength(bodies.length - failed.length);

    proxy.restore();
    // A failed POST may or may not have been committed before the connection dropped: the
    // client retries, and the same four fields are stored once and broadcast again.
    for (const i of failed) {
      await waitFor('a retried POST to succeed', async () => {
        return (await post(`${app.url}${PUBLISH}`, bodies[i])).status === 200;
      });
    }
    await watcher.untilEvents(bodies.length);
    await settle(100);
    const byId = new Map(watcher.events.map((e) => [e.id!, e.data]));
    expect(byId.size).toBe(bodies.length);
    expect(watcher.events).toHaveLength(bodies.length);
    expect((await storedNames(userId)).sort()).toEqual(bodies.map((b) => b.name).sort());
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  });
});
