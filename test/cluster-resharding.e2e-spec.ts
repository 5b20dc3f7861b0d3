import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BUS_DOWN } from './support/api.js';
import { uniqueRedisPrefix, useApp, type TestApp } from './support/app.js';
import { ClusterTraffic, describeOutcome } from './support/cluster-traffic.js';
import { waitFor } from './support/ports.js';
import { RedisCluster } from './support/redis-cluster.js';

const ARTIFACTS = fileURLToPath(new URL('artifacts/', import.meta.url));

/**
 * The bus channel's slot is moved to another master (`CLUSTER SETSLOT … IMPORTING/MIGRATING`,
 * its keys MIGRATEd, the new owner announced) while two instances publish and stream. Redis
 * unsubscribes the old shard's subscribers; their streams end and resume from the database.
 */
describe('Redis Cluster: the bus channel slot migrates to another master under traffic', () => {
  let cluster: RedisCluster | undefined;
  let traffic: ClusterTraffic | undefined;
  const prefix = uniqueRedisPrefix();
  const channel = `{${prefix}:name-events}`;
  const fx = useApp({
    backend: 'postgres',
    env: async () => {
      cluster = await RedisCluster.start();
      return { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_KEY_PREFIX: prefix, SSE_RETRY_MS: '500' };
    },
  });
  let b: TestApp;

  beforeAll(async () => {
    b = await fx.startInstance();
  });

  afterAll(async () => {
    traffic?.close();
    await cluster?.stop();
  });

  it('loses no event: what was not acknowledged is the bus-unavailable 500, and its retry 200', async () => {
    traffic = new ClusterTraffic([fx.url, b.url]);
    await traffic.listen(2);
    traffic.start(2);
    const slot = await cluster!.slotOf(channel);
    const source = await cluster!.masterOf(slot);
    const target = (await cluster!.topology()).find((n) => n.master && n.id !== source.id)!;

    await waitFor('20 acknowledged events', () => traffic!.okInARow(20), { timeoutMs: 30_000 });
    const startedAt = Date.now();
    await cluster!.migrateSlot(slot, target.port);
    const migratedAt = Date.now();
    expect((await cluster!.masterOf(slot, target.port)).id).toBe(target.id);
    const before = traffic.published.length;
    await waitFor('20 more acknowledged in a row', () => traffic!.okInARow(20, before), {
      timeoutMs: 30_000,
    });
    await waitFor('the listeners to be back', () => traffic!.listeners.every((l) => l.connected));
    await traffic.stop();

    const failed = await traffic.retryFailed();
    const stored = await traffic.stored(fx.db);
    const storedIds = stored.map((r) => r.id);
    await traffic.untilDelivered(storedIds).catch(() => undefined);
    const figures = {
      migrationMs: migratedAt - startedAt,
      postsAnswered: traffic.published.length,
      answeredNon200: failed.map((p) => ({
        answer: describeOutcome(p.outcome),
        retry: describeOutcome(p.retry!),
      })),
      listenerAttempts: traffic.listeners.map((l) => l.attempts),
      longestListenerGapMs: Math.max(...traffic.listeners.map((l) => l.longestGap)),
      eventsLostPerListener: traffic.lost(storedIds).map((ids) => ids.length),
      subscribersOnTheNewOwner: await cluster!.shardSubscribers(channel),
    };
    mkdirSync(ARTIFACTS, { recursive: true });
    writeFileSync(`${ARTIFACTS}cluster-resharding.json`, `${JSON.stringify(figures, null, 2)}\n`);

    expect(stored.map((r) => r.name).sort()).toEqual(traffic.published.map((p) => p.name).sort());
    for (const p of failed) {
      expect([p.name, p.outcome.status, JSON.parse((p.outcome as { body: string }).body)]).toEqual([
        p.name,
        500,
        BUS_DOWN,
      ]);
      expect([p.name, p.retry!.status]).toEqual([p.name, 200]);
    }
    expect(figures.eventsLostPerListener).toEqual(traffic.listeners.map(() => 0));
    const retried = new Set(failed.map((p) => p.name));
    for (const listener of traffic.listeners) {
      const fresh = listener.events.filter(
        (e) => !retried.has((JSON.parse(e.data) as { name: string }).name),
      );
      expect(fresh.map((e) => e.id)).toEqual(
        stored.filter((r) => !retried.has(r.name)).map((r) => r.id),
      );
    }
    // Both instances subscribed again, on the slot's new master.
    expect(figures.subscribersOnTheNewOwner).toBe(2);
  });
});
