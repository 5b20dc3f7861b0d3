import { BUS_DOWN, HEALTH_LIVE, HEALTH_READY, JSON_TYPE, STREAM_FAILED } from './support/api.js';
import { useApp } from './support/app.js';
import {
  eventsOf,
  historyEntry,
  streamed,
  uniqueUserId,
  type NameEventBody,
} from './support/events.js';
import { http } from './support/http.js';
import { waitFor } from './support/ports.js';
import { spyOnEachTest } from './support/process-spies.js';
import { ThrowawayRedis } from './support/redis-server.js';
import { dataInIdOrder } from './support/sse.js';

describe('faults: Redis down, hung, and back (a throwaway redis-server: killed, stopped, restarted)', () => {
  let redis: ThrowawayRedis;
  beforeAll(async () => {
    redis = await ThrowawayRedis.start();
  });
  const fx = useApp({ env: () => ({ REDIS_URL: redis.url }) });
  afterAll(() => redis?.kill());
  const spies = spyOnEachTest();

  const storedIds = async (userId: string) =>
    (
      await fx.db.query<{ id: string }>(
        'SELECT id::text AS id FROM name_change_events WHERE user_id = $1 ORDER BY name_change_events.id',
        [userId],
      )
    ).map((row) => row.id);

  it('survives three outages: stores, answers the contract 500s, ends streams, then resumes by itself with nothing lost', async () => {
    await fx.untilNobodyListens();
    const userId = uniqueUserId('faults');
    const next = eventsOf(userId);
    const published: NameEventBody[] = [];

    let everyone = await fx.listen();
    let mine = await fx.listen(`?userId=${userId}`);
    expect([everyone.status, mine.status]).toEqual([200, 200]);
    const first = next();
    expect((await fx.publish(first)).body).toEqual({ success: true });
    published.push(first);
    await everyone.untilEvents(1);
    await mine.untilEvents(1);

    for (let outage = 1; outage <= 3; outage++) {
      const lastSeen = everyone.events.at(-1)!.id!;
      const lastSeenMine = mine.events.at(-1)!.id!;
      expect(fx.listenerCount()).toBe(2);

      await redis.kill();

      // Open streams end cleanly (a complete chunked response, whole messages only).
      await everyone.until((s) => s.ended, 10_000);
      await mine.until((s) => s.ended, 10_000);
      for (const stream of [everyone, mine]) {
        expect(stream.response.complete).toBe(true);
        expect(stream.raw.endsWith('\n\n')).toBe(true);
      }
      await waitFor('the listener count to drop to 0', () => fx.listenerCount() === 0);

      // A POST is stored, then answered with the contract's 500.
      const during = [next(), next(), next()];
      for (const body of during) {
        const res = await fx.publish(body);
        expect(res.status).toBe(500);
        expect(res.headers.get('content-type')).toBe(JSON_TYPE);
        expect(res.body).toEqual(BUS_DOWN);
        published.push(body);
      }
      expect(await storedIds(userId)).toHaveLength(published.length);

      // A new listen is refused with the contract's 500, before any stream byte.
      const refused = await fx.listen();
      expect(refused.status).toBe(500);
      expect(refused.headers['content-type']).toBe(JSON_TYPE);
      expect(JSON.parse(await refused.body())).toEqual(STREAM_FAILED);
      expect(fx.listenerCount()).toBe(0);

      // Readiness says why; liveness holds (nothing to restart).
      const ready = await http(`${fx.url}${HEALTH_READY}`);
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({ message: 'Not ready: redis unavailable', code: 503 });
      expect((await http(`${fx.url}${HEALTH_LIVE}`)).status).toBe(200);

      // The history does not need Redis.
      const history = await fx.history(userId);
      expect(history.status).toBe(200);
      expect(history.body.prevnames).toHaveLength(published.length);

      await redis.restart();

      // The instance subscribes again by itself: a new listen works, with no restart. The
      // reconnecting listeners replay what was stored meanwhile, exactly once, in order.
      everyone = await waitFor('a listen to succeed after Redis is back', async () => {
        const stream = await fx.listen('', { 'Last-Event-ID': lastSeen });
        if (stream.status === 200) return stream;
        expect(JSON.parse(await stream.body())).toEqual(STREAM_FAILED);
        return undefined;
      });
      mine = await fx.listen(`?userId=${userId}&lastEventId=${lastSeenMine}`);
      expect(mine.status).toBe(200);
      await everyone.untilEvents(during.length);
      await mine.untilEvents(during.length);

      // The publisher connection may come back a moment after the subscriber: a client
      // retries a 500 (a repeat is stored once and re-sent with its original id).
      const after = next();
      await waitFor('a POST to succeed after Redis is back', async () => {
        const res = await fx.publish(after);
        if (res.status === 200) return true;
        expect(res.body).toEqual(BUS_DOWN);
        return false;
      });
      published.push(after);
      expect((await http(`${fx.url}${HEALTH_READY}`)).status).toBe(200);
      const sentinel = next();
      await fx.sentinel([everyone, mine], sentinel);
      published.push(sentinel);
      expect(dataInIdOrder(everyone)).toEqual([...during, after, sentinel].map(streamed));
      expect(dataInIdOrder(mine)).toEqual([...during, after, sentinel].map(streamed));
    }

    // Every accepted event is stored once, in order, and none was lost.
    const ids = await storedIds(userId);
    expect(ids).toHaveLength(published.length);
    expect((await fx.history(userId)).body.prevnames).toEqual(published.map(historyEntry));
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  });

  it('answers a listen still being set up when Redis drops with the contract 500, not an empty 200', async () => {
    await fx.untilNobodyListens();
    const live = await fx.listenWhenUp();
    // Hold the replay query of a second listen: it is then counted, but not streaming yet.
    const locker = await fx.db.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE name_change_events IN ACCESS EXCLUSIVE MODE');
      const opening = fx.listen('', { 'Last-Event-ID': '0' });
      await waitFor(
        'the replay query to wait on the lock',
        async () => (await fx.db.sessionsWaitingOnLock()) === 1,
      );
      expect(fx.listenerCount()).toBe(2);

      await redis.kill();
      await live.until((s) => s.ended, 10_000);
      await locker.query('COMMIT');

      const refused = await opening;
      expect(refused.status).toBe(500);
      expect(refused.headers['content-type']).toBe(JSON_TYPE);
      expect(JSON.parse(await refused.body())).toEqual(STREAM_FAILED);
      await waitFor('the listener count to drop to 0', () => fx.listenerCount() === 0);
    } finally {
      await locker.end();
      if (!redis.running) await redis.restart();
    }
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  });

  it('answers a POST in flight when Redis dies, and the retry reaches the listeners', async () => {
    await fx.listenWhenUp();
    const userId = uniqueUserId('faults');
    const next = eventsOf(userId);
    const watcher = await fx.listen(`?userId=${userId}`);
    expect(watcher.status).toBe(200);

    // A burst of POSTs, with Redis killed in the middle of it: each one gets a full answer,
    // 200 or the contract's 500, and none hangs.
    const bodies = Array.from({ length: 40 }, () => next());
    const answers = bodies.map((body) => fx.publish(body));
    await watcher.untilEvents(5, 10_000);
    await redis.kill();
    const results = await Promise.all(answers);
    for (const res of results) {
      if (res.status !== 200) expect(res.body).toEqual(BUS_DOWN);
    }
    expect(await storedIds(userId)).toHaveLength(bodies.length);
    await watcher.until((s) => s.ended, 10_000);

    await redis.restart();
    const resumed = await fx.listenWhenUp(`?userId=${userId}`, {
      'Last-Event-ID': watcher.events.at(-1)?.id ?? '0',
    });
    // Retrying every POST that failed delivers it; the listener dedupes by id.
    for (const [i, res] of results.entries()) {
      if (res.status === 200) continue;
      await waitFor('a retried POST to succeed', async () => {
        return (await fx.publish(bodies[i])).status === 200;
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
    const userId = uniqueUserId('faults');
    const next = eventsOf(userId);
    const [before, during, after] = [next(), next(), next()];
    const watcher = await fx.listenWhenUp(`?userId=${userId}`);
    expect((await fx.publish(before)).status).toBe(200);
    await watcher.untilEvents(1);

    redis.pause();
    // Within the Redis response timeout (5 s): a 500, with the event stored all the same.
    const res = await fx.publish(during);
    expect({ status: res.status, body: res.body }).toEqual({ status: 500, body: BUS_DOWN });
    expect(await storedIds(userId)).toHaveLength(2);
    // The silent subscription is noticed and the stream ends, so its client reconnects...
    await watcher.until((s) => s.ended, 15_000);
    const refused = await fx.listen();
    expect({ status: refused.status, body: JSON.parse(await refused.body()) as unknown }).toEqual({
      status: 500,
      body: STREAM_FAILED,
    });

    // ...and once Redis answers again, it resumes with what it missed, then goes on live.
    redis.resume();
    const resumed = await fx.listenWhenUp(`?userId=${userId}`, {
      'Last-Event-ID': watcher.events[0].id!,
    });
    await waitFor('a POST to succeed again', async () => {
      return (await fx.publish(after)).status === 200;
    });
    const sentinel = next();
    await fx.sentinel([resumed], sentinel);
    expect(watcher.events.map((e) => e.data)).toEqual([streamed(before)]);
    expect(dataInIdOrder(resumed)).toEqual([during, after, sentinel].map(streamed));
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  }, 60_000);
});
