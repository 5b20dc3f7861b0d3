/**
 * The detector's keys on a Redis Cluster: the shard leases, the instances' heartbeats, the
 * identify turns and the day's budget (one script over keys sharing a hash tag), and the
 * sessions kept for a RESUME, as detector-shards checks them on one Redis.
 */
import { serverPerShard, useShardedDetector } from './support/detector-shards.js';
import { RedisCluster } from './support/redis-cluster.js';

describe('four shards over two instances on a Redis Cluster', () => {
  let cluster: RedisCluster;
  const fleet = useShardedDetector(() => ({
    shardCount: 4,
    maxConcurrency: 1,
    guilds: serverPerShard(4),
  }));
  const onCluster = () => ({ REDIS_URL: '', REDIS_CLUSTER_NODES: cluster.seeds });

  beforeAll(async () => {
    cluster = await RedisCluster.start();
  }, 60_000);
  afterAll(() => cluster.stop());

  it('spreads the shards, paces identifies, and resumes the sessions of an instance that stops', async () => {
    const [a] = await Promise.all([fleet.start(onCluster()), fleet.start(onCluster())]);
    await fleet.spreadAs([2, 2], 60_000);
    // One bucket: four sessions, 5 s apart (the fake records any sooner as a breach).
    expect(fleet.discord.identifies.map((c) => c.shardId).sort()).toEqual([0, 1, 2, 3]);
    expect(await fleet.renameEach('a')).toHaveLength(4);

    await fleet.stop(a);
    await fleet.spreadAs([4]);
    // The survivor resumed the sessions the stopped one kept in the cluster: no new identify.
    expect(fleet.discord.identifies).toHaveLength(4);
    expect(await fleet.renameEach('b')).toHaveLength(4);
    expect(fleet.discord.breaches).toEqual([]);
  }, 120_000);
});
