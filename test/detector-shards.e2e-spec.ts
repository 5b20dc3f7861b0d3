/**
 * Shards spread over instances: each shard run by exactly one instance, each instance holding
 * at most ⌈shards ÷ instances⌉; an instance that joins gets some, one that stops gives its
 * own back; never a shard connected twice at the same moment, never an identify above
 * `max_concurrency` per 5 s (the fake Discord records both as breaches). In-process
 * instances; a killed one: detector-shards-kill.
 */
import { useShardedDetector, serverPerShard } from './support/detector-shards.js';

describe('four shards over instances (one Redis, one Discord)', () => {
  const fleet = useShardedDetector(() => ({
    shardCount: 4,
    maxConcurrency: 2,
    guilds: serverPerShard(4),
  }));

  it('spreads 4 shards over 3 instances, 1 or 2 each, and records each change once', async () => {
    await Promise.all([fleet.start(), fleet.start(), fleet.start()]);
    await fleet.spreadAs([1, 1, 2]);
    const changes = await fleet.renameEach('a');
    expect(changes).toHaveLength(4);
    expect(new Set(changes.map((c) => c.userId)).size).toBe(4);
    expect(fleet.discord.breaches).toEqual([]);
  }, 60_000);

  it('rebalances when a third instance joins and when one leaves, never connecting a shard twice', async () => {
    const [a] = await Promise.all([fleet.start(), fleet.start()]);
    await fleet.spreadAs([2, 2]);
    await fleet.start();
    await fleet.spreadAs([1, 1, 2]);
    expect(await fleet.renameEach('b')).toHaveLength(4);

    await fleet.stop(a);
    await fleet.spreadAs([2, 2]);
    expect(await fleet.renameEach('c')).toHaveLength(4);
    expect(fleet.discord.breaches).toEqual([]);
  }, 90_000);
});

describe('identifies across instances, max_concurrency 1', () => {
  const fleet = useShardedDetector(() => ({
    shardCount: 4,
    maxConcurrency: 1,
    guilds: serverPerShard(4),
  }));

  it('never identifies more than once per 5 s, however many instances start together', async () => {
    await Promise.all([fleet.start(), fleet.start(), fleet.start()]);
    await fleet.spreadAs([1, 1, 2], 60_000);
    // Four sessions, one per shard: one bucket, so one at a time, 5 s apart (the fake
    // records any IDENTIFY sooner than that as a breach).
    expect(fleet.discord.identifies.map((c) => c.shardId).sort()).toEqual([0, 1, 2, 3]);
    expect(fleet.discord.breaches).toEqual([]);
  }, 90_000);
});
