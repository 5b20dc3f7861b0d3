import {
  HEALTH_LIVE,
  HEALTH_READY,
  INTERNAL_ERROR,
  JSON_TYPE,
  STORAGE_DOWN,
  STREAM_FAILED,
} from './support/api.js';
import { useApp } from './support/app.js';
import { eventsOf, historyEntry, streamed, uniqueUserId } from './support/events.js';
import { http, type HttpResult } from './support/http.js';
import { waitFor } from './support/ports.js';
import { spyOnEachTest } from './support/process-spies.js';
import { sentinelArrived } from './support/sentinel.js';
import { dataInIdOrder, opening } from './support/sse.js';
import { proxiedDatabase, type TcpProxy } from './support/tcp-proxy.js';

describe('faults: Postgres down and back (a TCP proxy in front of it, cut and restored)', () => {
  let proxy: TcpProxy;
  const fx = useApp({
    env: async (db) => {
      const proxied = await proxiedDatabase(db!.url);
      proxy = proxied.proxy;
      return { DATABASE_URL: proxied.url };
    },
  });
  afterAll(() => proxy?.close());
  const spies = spyOnEachTest();

  const storedNames = async (userId: string) =>
    (
      await fx.db.query<{ name: string }>(
        'SELECT name FROM name_change_events WHERE user_id = $1 ORDER BY name_change_events.id',
        [userId],
      )
    ).map((row) => row.name);
  /** POSTs `body` until it is accepted: a client retrying while the database comes back. */
  const publishUntilAccepted = (body: unknown) =>
    waitFor('a POST to succeed', async () => (await fx.publish(body)).status === 200);

  it('answers the contract 500s and 503 while it is down, broadcasts nothing, and recovers without a restart', async () => {
    const userId = uniqueUserId('faults');
    const next = eventsOf(userId);
    const watcher = await fx.listen();
    expect(watcher.status).toBe(200);
    const before = next();
    expect((await fx.publish(before)).status).toBe(200);
    await watcher.untilEvents(1);
    const lastSeen = watcher.events[0].id!;
    const accepted = [before];

    for (let outage = 1; outage <= 3; outage++) {
      proxy.cut();

      const history = await fx.history(userId);
      expect(history.status).toBe(500);
      expect(history.headers.get('content-type')).toBe(JSON_TYPE);
      expect(history.body).toEqual(INTERNAL_ERROR);

      const lost = next();
      const res = await fx.publish(lost);
      expect(res.status).toBe(500);
      expect(res.body).toEqual(STORAGE_DOWN);

      const ready = await http(`${fx.url}${HEALTH_READY}`);
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({ message: 'Not ready: database unavailable', code: 503 });
      expect((await http(`${fx.url}${HEALTH_LIVE}`)).status).toBe(200);

      // A replaying listen needs the database: refused. A live-only one does not.
      const replaying = await fx.listen('', { 'Last-Event-ID': lastSeen });
      expect(replaying.status).toBe(500);
      expect(JSON.parse(await replaying.body())).toEqual(STREAM_FAILED);
      const live = await fx.listen();
      expect(live.status).toBe(200);
      live.close();

      proxy.restore();

      await waitFor('the history to answer again', async () => {
        const again = await fx.history(userId);
        if (again.status === 200) return true;
        expect(again.body).toEqual(INTERNAL_ERROR);
        return false;
      });
      expect((await http(`${fx.url}${HEALTH_READY}`)).status).toBe(200);
      const after = next();
      expect((await fx.publish(after)).body).toEqual({ success: true });
      const sentinel = next();
      await fx.sentinel([watcher], sentinel);
      accepted.push(after, sentinel);
      // The events the watcher sees after the outage are those after it: the refused one was
      // never broadcast (ordering holds on one stream).
      expect(dataInIdOrder(watcher)).toEqual(accepted.map(streamed));
      expect(await storedNames(userId)).toEqual(accepted.map((b) => b.name));
    }

    const history = await fx.history(userId);
    expect(history.body).toEqual({ userId, prevnames: accepted.map(historyEntry), code: 200 });
    expect(proxy.forwarded).toBeGreaterThan(1);
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  });

  it('answers while Postgres hangs: the contract 500s, and a new stream opens without its starting id', async () => {
    const userId = uniqueUserId('faults');
    const next = eventsOf(userId);
    const watcher = await fx.listen(`?userId=${userId}`);
    expect(watcher.status).toBe(200);
    const accepted = [next()];
    expect((await fx.publish(accepted[0])).body).toEqual({ success: true });
    await watcher.untilEvents(1);

    proxy.stall();
    // A live-only stream reads its starting id as a best effort: it opens without it while a
    // POST sent at the same moment still waits for the database's own timeouts (5 s for a
    // connection, 11 s for a query on an open one, as here).
    let published: HttpResult | undefined;
    const publishing = fx.publish(next()).then((res) => (published = res));
    const live = await fx.listen();
    expect(live.status).toBe(200);
    await live.until((s) => s.raw.length > 0);
    expect(published).toBeUndefined();
    expect(live.raw).toBe(opening(''));
    live.close();
    const history = await fx.history(userId);
    await publishing;
    expect({ status: published!.status, body: published!.body }).toEqual({
      status: 500,
      body: STORAGE_DOWN,
    });
    expect({ status: history.status, body: history.body }).toEqual({
      status: 500,
      body: INTERNAL_ERROR,
    });

    proxy.restore();
    const after = next();
    await publishUntilAccepted(after);
    const sentinel = next();
    await fx.sentinel([watcher], sentinel);
    accepted.push(after, sentinel);
    expect(dataInIdOrder(watcher)).toEqual(accepted.map(streamed));
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  }, 60_000);

  it('answers every POST in flight when Postgres drops, and retries store each event once', async () => {
    const userId = uniqueUserId('faults');
    const next = eventsOf(userId);
    const watcher = await fx.listen(`?userId=${userId}`);
    expect(watcher.status).toBe(200);

    const bodies = Array.from({ length: 40 }, () => next());
    const before = [];
    for (const body of bodies.slice(0, 5)) before.push(await fx.publish(body));
    await watcher.untilEvents(5, 10_000);
    // The rest reach the service while Postgres hangs, and are in flight when it drops.
    proxy.stall();
    let received = 0;
    const server = fx.app.getHttpServer();
    const count = () => received++;
    server.on('request', count);
    const during = bodies.slice(5).map((body) => fx.publish(body));
    await waitFor('every POST to reach the service', () => received === during.length);
    server.off('request', count);
    proxy.cut();
    const results = [...before, ...(await Promise.all(during))];
    const failed = results.flatMap((res, i) => (res.status === 200 ? [] : [i]));
    for (const i of failed) expect(results[i].body).toEqual(STORAGE_DOWN);
    expect(failed.length).toBeGreaterThan(0);

    proxy.restore();
    // Whatever was answered 200 was broadcast; what failed was not (a sentinel sent once the
    // database is back closes what arrived).
    const first = next();
    await publishUntilAccepted(first);
    await sentinelArrived([watcher], first);
    expect(watcher.events).toHaveLength(bodies.length - failed.length + 1);

    // A failed POST may or may not have been committed before the connection dropped: the
    // client retries, and the same four fields are stored once and broadcast again.
    for (const i of failed) await publishUntilAccepted(bodies[i]);
    const last = next();
    await fx.sentinel([watcher], last);
    const byId = new Map(watcher.events.map((e) => [e.id!, e.data]));
    expect(byId.size).toBe(bodies.length + 2);
    expect(watcher.events).toHaveLength(bodies.length + 2);
    expect((await storedNames(userId)).sort()).toEqual(
      [...bodies, first, last].map((b) => b.name).sort(),
    );
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  });
});
