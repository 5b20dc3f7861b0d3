import { Leases, type Lease } from '../src/redis/leases.js';
import { PUBLISH } from './support/api.js';
import { uniqueRedisPrefix, useApp, type TestApp } from './support/app.js';
import { nameEvent, uniqueUserId } from './support/events.js';
import { post } from './support/http.js';
import { waitFor } from './support/ports.js';
import { RedisCluster } from './support/redis-cluster.js';
import { rawCommand } from './support/redis-protocol.js';

/**
 * What the service keeps in Redis besides the bus, on a Redis Cluster: the rate limit's
 * counters and the leases (several renewed by one script, so their keys share one slot).
 */
describe('keys on a Redis Cluster: the rate limit and the leases', () => {
  let cluster: RedisCluster | undefined;
  const prefix = uniqueRedisPrefix();
  const fx = useApp({
    backend: 'postgres',
    env: async () => {
      cluster = await RedisCluster.start();
      return {
        REDIS_CLUSTER_NODES: cluster.seeds,
        REDIS_KEY_PREFIX: prefix,
        PUBLISH_RATE_LIMIT: '3',
        PUBLISH_RATE_WINDOW_MS: '60000',
      };
    },
  });
  let b: TestApp;

  beforeAll(async () => {
    b = await fx.startInstance();
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it('answers 429 past the limit, counted across instances', async () => {
    await fx.listen();
    const userId = uniqueUserId('limited');
    const statuses = [];
    for (const [i, target] of [fx.instance, b, fx.instance, b].entries()) {
      statuses.push(
        (await post(`${target.url}${PUBLISH}`, nameEvent({ userId, name: `n${i}` }))).status,
      );
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it('renews several leases in one script on one slot, and releases them', async () => {
    const leases = fx.app.get(Leases);
    const names = ['shard:0', 'shard:1', 'endpoint:42'];
    const held: Lease[] = [];
    for (const name of names) {
      const attempt = await leases.tryAcquire(name, 1_500);
      expect(attempt.lease?.name).toBe(name);
      held.push(attempt.lease!);
    }
    const keys = names.map((name) => `{${prefix}:lease}:${name}`);
    const slots = await Promise.all(keys.map((key) => cluster!.slotOf(key)));
    expect(new Set(slots).size).toBe(1);
    const owner = await cluster!.masterOf(slots[0]);
    const pttl = async (key: string) =>
      Number((await rawCommand(owner.port, ['PTTL', key])).slice(1));

    // Each key's time to live goes up again three times: renewed, well past its 1.5 s.
    let last = await pttl(keys[2]);
    let renewals = 0;
    await waitFor(
      'three renewals',
      async () => {
        const now = await pttl(keys[2]);
        if (now > last) renewals++;
        last = now;
        return renewals >= 3;
      },
      { timeoutMs: 10_000 },
    );
    for (const key of keys) expect(await pttl(key)).toBeGreaterThan(0);
    expect(held.map((lease) => lease.signal.aborted)).toEqual([false, false, false]);

    // Another instance cannot take them meanwhile.
    const other = await b.app.get(Leases).tryAcquire('shard:1', 1_500);
    expect(other.lease).toBeUndefined();
    await Promise.all(held.map((lease) => lease.release()));
    expect(await Promise.all(keys.map(pttl))).toEqual([-2, -2, -2]);
  });
});
