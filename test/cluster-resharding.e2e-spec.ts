import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { uniqueRedisPrefix, useApp, type TestApp } from './support/app.js';
import { ClusterTraffic } from './support/cluster-traffic.js';
import { waitFor } from './support/ports.js';
import { RedisCluster } from './support/redis-cluster.js';
import { rawCommand } from './support/redis-protocol.js';

const ARTIFACTS = fileURLToPath(new URL('artifacts/', import.meta.url));

/**
 * The bus channel's slot changes hands while two instances publish and stream: moved to
 * another master (`CLUSTER SETSLOT … IMPORTING/MIGRATING`, its keys MIGRATEd, the new owner
 * announced), or its master handed over to its replica (`CLUSTER FAILOVER`, as a managed
 * cluster's maintenance does). Either way Redis unsubscribes the old owner's subscribers
 * (an unsolicited SUNSUBSCRIBE, which ioredis reports as `moved`: this test fails if it stops
 * doing so); their streams end and resume from the database, and no event is lost.
 */
describe('Redis Cluster: the bus channel slot changes hands under traffic', () => {
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

  afterEach(() => {
    traffic?.close();
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  /** Runs `change` under traffic; checks that nothing was lost; writes the figures. */
  const underTraffic = async (name: string, change: () => Promise<void>) => {
    traffic = new ClusterTraffic([fx.url, b.url]);
    await traffic.listen(2);
    traffic.start(2);
    await waitFor('20 acknowledged events', () => traffic!.okInARow(20), { timeoutMs: 30_000 });
    const startedAt = Date.now();
    await change();
    const changeMs = Date.now() - startedAt;
    const before = traffic.published.length;
    await waitFor('20 more acknowledged in a row', () => traffic!.okInARow(20, before), {
      timeoutMs: 30_000,
    });
    await waitFor('the listeners to be back', () => traffic!.listeners.every((l) => l.connected));
    await traffic.stop();
    const { failed, stored, figures } = await traffic.settle(fx.db);
    const subscribers = await cluster!.shardSubscribers(channel);
    mkdirSync(ARTIFACTS, { recursive: true });
    writeFileSync(
      `${ARTIFACTS}cluster-${name}.json`,
      `${JSON.stringify({ changeMs, ...figures, subscribers }, null, 2)}\n`,
    );
    traffic.expectNothingLost(failed, stored);
    // Both instances subscribed again, on the slot's new master.
    expect(subscribers).toBe(2);
  };

  it('loses no event when the slot migrates to another master', async () => {
    const slot = await cluster!.slotOf(channel);
    const source = await cluster!.masterOf(slot);
    const target = (await cluster!.topology()).find((n) => n.master && n.id !== source.id)!;
    await underTraffic('resharding', async () => {
      await cluster!.migrateSlot(slot, target.port);
      expect((await cluster!.masterOf(slot, target.port)).id).toBe(target.id);
    });
  }, 120_000);

  it('loses no event when the master hands over to its replica (CLUSTER FAILOVER)', async () => {
    const slot = await cluster!.slotOf(channel);
    const master = await cluster!.masterOf(slot);
    const replica = (await cluster!.topology()).find((n) => n.masterId === master.id)!;
    await underTraffic('manual-failover', async () => {
      expect(await rawCommand(replica.port, ['CLUSTER', 'FAILOVER'])).toBe('+OK');
      await waitFor('the replica to serve the slot', async () => {
        const now = await cluster!.masterOf(slot, replica.port);
        return now.id === replica.id;
      });
    });
  }, 120_000);
});
