import { BUS_DOWN, NO_LISTENERS, PUBLISH, PUBLISHED } from './support/api.js';
import { uniqueRedisPrefix, useApp, type TestApp } from './support/app.js';
import {
  eventsOf,
  historyEntry,
  nameEvent,
  streamed,
  type NameEventBody,
} from './support/events.js';
import { http, post } from './support/http.js';
import { waitFor } from './support/ports.js';
import { RedisCluster } from './support/redis-cluster.js';
import { rawCommand } from './support/redis-protocol.js';
import { frame, opening } from './support/sse.js';

/**
 * The contract's publish and stream properties, with two instances on a Redis Cluster of the
 * test's own (six real `redis-server --cluster-enabled yes`): the bus is sharded pub/sub.
 */
describe('publish and listen across two instances on a Redis Cluster', () => {
  let cluster: RedisCluster | undefined;
  const prefix = uniqueRedisPrefix();
  const channel = `{${prefix}:name-events}`;
  const fx = useApp({
    backend: 'postgres',
    env: async () => {
      cluster = await RedisCluster.start();
      return { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_KEY_PREFIX: prefix };
    },
  });
  let a: TestApp;
  let b: TestApp;
  const publishTo = (instance: TestApp, body: NameEventBody) =>
    post(`${instance.url}${PUBLISH}`, body);
  /** No stream on either instance, and none of them subscribed on the channel's shard. */
  const untilNobodyListens = async () => {
    await fx.untilNobodyListens();
    await waitFor(
      'no instance subscribed',
      async () => (await cluster!.shardSubscribers(channel)) === 0,
    );
  };

  beforeAll(async () => {
    a = fx.instance;
    b = await fx.startInstance();
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it('says so at readiness, and subscribes on the shard of the channel only while listened to', async () => {
    const ready = await http(`${b.url}/api/health/ready`);
    expect([ready.status, ready.body]).toEqual([
      200,
      { status: 'ok', details: { database: { status: 'up' }, redis: { status: 'up' } } },
    ]);
    await untilNobodyListens();
    const onA = await fx.listenTo(a);
    const onB = await fx.listenTo(b);
    expect([onA.status, onB.status]).toEqual([200, 200]);
    expect(await cluster!.shardSubscribers(channel)).toBe(2);
    onA.close();
    onB.close();
    await untilNobodyListens();
  });

  it('delivers a POST to A to the listeners of A and B exactly once, with the exact bytes', async () => {
    const onA = await fx.listenTo(a);
    const onB = await fx.listenTo(b);
    await Promise.all([onA, onB].map((s) => s.until((x) => x.raw.length > 0)));
    const startA = /^\nid: (\d+)\nretry: 3000\n\n$/.exec(onA.raw)![1];
    const body = nameEvent({ changedAt: '2024-06-07T17:30:00+02:00' });
    const res = await publishTo(a, body);
    expect([res.status, res.body]).toEqual([200, PUBLISHED]);
    const sentinel = await fx.sentinel([onA, onB]);
    const [event] = onA.events;
    expect(onA.raw).toBe(
      `${opening(startA)}${frame(event.id!, { ...body, changedAt: '2024-06-07T15:30:00.000Z' })}${sentinel.frame}`,
    );
    expect(onB.events).toEqual(onA.events);
  });

  it('counts a listener on B only as a listener for a POST to A', async () => {
    await untilNobodyListens();
    const onB = await fx.listenTo(b);
    const res = await publishTo(a, nameEvent());
    expect([res.status, res.body]).toEqual([200, PUBLISHED]);
    await onB.untilEvents(1);
  });

  it('answers the no-listener 500 with no listener on any instance, and stores the event', async () => {
    await untilNobodyListens();
    const body = nameEvent();
    const res = await publishTo(a, body);
    expect([res.status, res.body]).toEqual([500, NO_LISTENERS]);
    const history = await http(`${b.url}/api/users/${body.userId}/prevnames`);
    expect(history.body).toEqual({
      userId: body.userId,
      prevnames: [historyEntry(body)],
      code: 200,
    });
  });

  it('keeps 40 racing POSTs over both instances in id order for 10 listeners', async () => {
    const listeners = await Promise.all(
      Array.from({ length: 10 }, (_, i) => fx.listenTo(i % 2 ? a : b)),
    );
    const next = eventsOf(nameEvent().userId);
    const bodies = Array.from({ length: 40 }, next);
    const results = await Promise.all(bodies.map((body, i) => publishTo(i % 2 ? a : b, body)));
    expect(results.map((r) => r.status)).toEqual(Array(40).fill(200));
    const sentinel = await fx.sentinel(listeners);
    const stored = await fx.db.query<{ id: string }>(
      'SELECT id::text AS id FROM name_change_events WHERE user_id = $1 ORDER BY name_change_events.id',
      [bodies[0].userId],
    );
    for (const listener of listeners) {
      expect(listener.events.map((e) => e.id)).toEqual([...stored.map((r) => r.id), sentinel.id]);
    }
  });

  it('replays across instances: listen on A, resume on B with Last-Event-ID', async () => {
    const next = eventsOf(nameEvent().userId);
    const onA = await fx.listenTo(a);
    const first = next();
    expect((await publishTo(a, first)).status).toBe(200);
    await onA.untilEvents(1);
    const lastId = onA.events[0].id!;
    const keeper = await fx.listenTo(a);
    onA.close();
    const missed = [next(), next()];
    for (const body of missed) expect((await publishTo(a, body)).status).toBe(200);
    await keeper.untilEvents(2);
    const onB = await fx.listenTo(b, '', { 'Last-Event-ID': lastId });
    const live = next();
    expect((await publishTo(a, live)).status).toBe(200);
    await fx.sentinel([onB], next());
    expect(onB.events.slice(0, 3).map((e) => e.data)).toEqual([...missed, live].map(streamed));
    expect(onB.raw.startsWith(opening(lastId))).toBe(true);
  });

  it('starts a new stream without a gap while another instance publishes', async () => {
    const next = eventsOf(nameEvent().userId);
    const keeper = await fx.listenTo(a);
    let stop = false;
    const publishing = (async () => {
      while (!stop) expect((await publishTo(a, next())).status).toBe(200);
    })();
    try {
      await keeper.untilEvents(5);
      const onB = await fx.listenTo(b);
      await onB.until((s) => s.raw.length > 0);
      const startId = BigInt(/^\nid: (\d+)\n/.exec(onB.raw)![1]);
      // Five published after B's stream started (the keeper may still be receiving older ones).
      await keeper.until((s) => s.events.filter((e) => BigInt(e.id!) > startId).length >= 5);
      stop = true;
      await publishing;
      const sentinel = await fx.sentinel([onB, keeper], next());
      const stored = await fx.db.query<{ id: string }>(
        'SELECT id::text AS id FROM name_change_events WHERE user_id = $1 AND id > $2 ORDER BY name_change_events.id',
        [sentinel.data.userId, startId.toString()],
      );
      expect(stored.length).toBeGreaterThan(5);
      // Every event after the starting id, in order. Events up to it may come too, ahead of
      // them (still on their way when the stream opened: delivery is at-least-once).
      const ids = onB.events.map((e) => BigInt(e.id!));
      expect(ids.filter((id) => id > startId).map(String)).toEqual(stored.map((r) => r.id));
      expect([...ids].sort((x, y) => (x < y ? -1 : 1))).toEqual(ids);
      expect(new Set(ids).size).toBe(ids.length);
    } finally {
      stop = true;
      await publishing;
    }
  });

  it('never claims "no listener" while a subscription is being re-established', async () => {
    await untilNobodyListens();
    const onA = await fx.listenTo(a);
    const slot = await cluster!.slotOf(channel);
    const master = await cluster!.masterOf(slot);
    const replica = (await cluster!.topology()).find((n) => n.masterId === master.id)!;
    expect(await rawCommand(replica.port, ['CLUSTER', 'FAILOVER'])).toBe('+OK');
    // Redis unsubscribes A on the old master: its stream ends (its client would resume).
    await onA.until((s) => s.ended, 15_000);
    const during = await publishTo(b, nameEvent());
    expect([during.status, during.body]).toEqual([500, BUS_DOWN]);
    // Back, on the new master; then gone for good: "no listener" again.
    const again = await fx.listenTo(a);
    expect(again.status).toBe(200);
    // B's cluster client may see the new master a moment after A does: until then its POSTs
    // are the bus-unavailable 500 (stored, resent on retry), never "no listener".
    const meanwhile: unknown[] = [];
    await waitFor(
      'a POST through B to reach A on the new master',
      async () => {
        const res = await publishTo(b, nameEvent());
        if (res.status !== 200) meanwhile.push(res.body);
        return res.status === 200;
      },
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    expect(meanwhile).toEqual(meanwhile.map(() => BUS_DOWN));
    again.close();
    await untilNobodyListens();
    const after = await publishTo(b, nameEvent());
    expect([after.status, after.body]).toEqual([500, NO_LISTENERS]);
  });
});
