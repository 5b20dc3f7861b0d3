import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { uniqueRedisPrefix } from './support/app.js';
import { ClusterTraffic } from './support/cluster-traffic.js';
import { TestDatabase } from './support/database.js';
import { http } from './support/http.js';
import { waitFor } from './support/ports.js';
import { RedisCluster } from './support/redis-cluster.js';
import { ensureBuilt, ServiceProcess } from './support/service-process.js';

const PROCESS_TIMEOUT_MS = 300_000;
const ARTIFACTS = fileURLToPath(new URL('artifacts/', import.meta.url));

/**
 * A Redis Cluster loses the master that carries the bus channel's slot (SIGKILL) while two
 * instances publish and stream; the cluster promotes its replica. Meanwhile POSTs answer the
 * bus-unavailable 500 (never "no listener": the subscriptions are being re-established),
 * readiness says 503; afterwards nothing acknowledged is missing from any listener.
 */
describe('Redis Cluster: the master of the bus channel is killed and its replica promoted', () => {
  let db: TestDatabase;
  let cluster: RedisCluster;
  let traffic: ClusterTraffic | undefined;
  const instances: ServiceProcess[] = [];
  const prefix = uniqueRedisPrefix();
  const channel = `{${prefix}:name-events}`;

  beforeAll(async () => {
    ensureBuilt();
    db = await TestDatabase.create();
    // A master silent for 2 s is failing: an outage longer than readiness's 2 s ping timeout.
    cluster = await RedisCluster.start({ nodeTimeoutMs: 2_000 });
  }, PROCESS_TIMEOUT_MS);

  afterAll(async () => {
    traffic?.close();
    await Promise.all(instances.map((instance) => instance.stop('SIGKILL')));
    await cluster?.stop();
    await db?.drop();
  });

  it(
    'answers the bus-unavailable 500 meanwhile, recovers, and loses nothing acknowledged',
    async () => {
      const env = {
        DATABASE_URL: db.url,
        REDIS_CLUSTER_NODES: cluster.seeds,
        REDIS_KEY_PREFIX: prefix,
        // The rate limit keeps its counters in the cluster: another role that must follow.
        PUBLISH_RATE_LIMIT: '1000000',
        SSE_RETRY_MS: '500',
      };
      for (let i = 0; i < 2; i++) instances.push(await ServiceProcess.start(env));
      const pids = instances.map((instance) => instance.pid);
      traffic = new ClusterTraffic(instances.map((instance) => instance.url));
      await traffic.listen(2);
      traffic.start(2);

      const slot = await cluster.slotOf(channel);
      const master = await cluster.masterOf(slot);
      await waitFor('20 acknowledged events', () => traffic!.okInARow(20), { timeoutMs: 30_000 });
      const killedAt = Date.now();
      await cluster.node(master.port).kill();
      const promoted = await waitFor(
        'the replica to take over the slot',
        async () => {
          const now = await cluster.masterOf(slot).catch(() => undefined);
          return now && now.port !== master.port ? now : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 50 },
      );
      const promotedAt = Date.now();
      await cluster.untilHealthy(60_000);
      const before = traffic.published.length;
      await waitFor('publishing to recover: 20 acknowledged in a row', () =>
        traffic!.okInARow(20, before),
      );
      await waitFor(
        'readiness 200 again',
        async () => (await http(`${instances[1].url}/api/health/ready`)).status === 200,
      );
      await traffic.stop();

      const { failed, stored, figures: trafficFigures } = await traffic.settle(db);
      const afterKill = traffic.readiness
        .filter((r) => r.at > killedAt)
        .sort((x, y) => x.at - y.at);
      const figures = {
        killedMasterPort: master.port,
        promotedPort: promoted.port,
        killToPromotionMs: promotedAt - killedAt,
        killToFirstAcknowledgedMs:
          (traffic.published.find((p) => p.at > killedAt && p.outcome.status === 200)?.at ??
            Number.NaN) - killedAt,
        readinessAfterKill: summarize(afterKill.map((r) => r.status)),
        ...trafficFigures,
      };
      mkdirSync(ARTIFACTS, { recursive: true });
      writeFileSync(`${ARTIFACTS}cluster-failover.json`, `${JSON.stringify(figures, null, 2)}\n`);

      // Some POSTs met the outage, and none of them was lost (see expectNothingLost).
      expect(failed.length).toBeGreaterThan(0);
      traffic.expectNothingLost(failed, stored);
      // Readiness said 503 while the bus was down, and 200 after.
      expect(afterKill.some((r) => r.status === 503)).toBe(true);
      expect(afterKill.at(-1)!.status).toBe(200);
      expect(instances.map((instance) => [instance.pid, instance.exit])).toEqual(
        pids.map((pid) => [pid, undefined]),
      );
    },
    PROCESS_TIMEOUT_MS,
  );
});

/** Consecutive equal values as `value×count`: `200×12, 503×40, 200×3`. */
function summarize(values: number[]): string {
  const runs: [number, number][] = [];
  for (const value of values) {
    if (runs.at(-1)?.[0] === value) runs.at(-1)![1]++;
    else runs.push([value, 1]);
  }
  return runs.map(([value, count]) => `${value}×${count}`).join(', ');
}
