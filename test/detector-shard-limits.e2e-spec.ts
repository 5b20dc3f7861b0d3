/**
 * The detector's shard count and session budget as Discord gives them: DETECTOR_SHARD_COUNT
 * wins over the recommended count, no number of instances starts more sessions than the
 * day's `session_start_limit.remaining` allows before its reset, and an IDENTIFY slow to
 * arrive does not bring the next one in its bucket closer than 5 s.
 */
import { useDetectorApp } from './support/detector-app.js';
import { serverPerShard, useShardedDetector } from './support/detector-shards.js';

describe('DETECTOR_SHARD_COUNT', () => {
  const fleet = useShardedDetector(() => ({
    shardCount: 3,
    recommendedShardCount: 2,
    guilds: serverPerShard(3),
  }));

  it('fixes the total: 3 shards where Discord recommends 2', async () => {
    await fleet.start({ DETECTOR_SHARD_COUNT: '3' });
    await fleet.spreadAs([3]);
    expect(fleet.discord.identifies.map((c) => c.shardId).sort()).toEqual([0, 1, 2]);
    expect(await fleet.renameEach('a')).toHaveLength(3);
    expect(fleet.discord.breaches).toEqual([]);
  }, 60_000);
});

describe('the day’s session starts, across instances', () => {
  const fleet = useShardedDetector(() => ({
    shardCount: 2,
    maxConcurrency: 2,
    sessionStarts: { remaining: 1, resetAfterMs: 4_000 },
    guilds: serverPerShard(2),
  }));

  it('starts one session while one is left; the other shard identifies after the reset', async () => {
    await Promise.all([fleet.start(), fleet.start()]);
    await fleet.spreadAs([1, 1], 30_000);
    const identifies = fleet.discord.identifies;
    expect(identifies.map((c) => c.shardId).sort()).toEqual([0, 1]);
    // Two buckets (max_concurrency 2): only the budget held the second one back.
    expect(identifies[0].authenticatedAt!).toBeLessThan(fleet.discord.sessionStartsResetAt);
    expect(identifies[1].authenticatedAt!).toBeGreaterThanOrEqual(
      fleet.discord.sessionStartsResetAt,
    );
    expect(await fleet.renameEach('b')).toHaveLength(2);
    expect(fleet.discord.breaches).toEqual([]);
  }, 60_000);
});

describe('an IDENTIFY late on its way, across instances', () => {
  const fleet = useShardedDetector(() => ({
    shardCount: 2,
    maxConcurrency: 1,
    firstIdentifyLatencyMs: 1_000,
    guilds: serverPerShard(2),
  }));

  it('holds the bucket 5 s from when Discord counted it, not from when it was sent', async () => {
    await Promise.all([fleet.start(), fleet.start()]);
    await fleet.spreadAs([1, 1], 30_000);
    const identifies = fleet.discord.identifies;
    expect(identifies.map((c) => c.shardId).sort()).toEqual([0, 1]);
    // One bucket: the second IDENTIFY is counted 5 s after the late first one at the soonest.
    expect(fleet.discord.breaches).toEqual([]);
  }, 60_000);
});

describe('an IDENTIFY late on its way, one instance without Redis', () => {
  const { discord } = useDetectorApp(
    { shardCount: 2, maxConcurrency: 1, firstIdentifyLatencyMs: 1_000, guilds: serverPerShard(2) },
    { backend: 'postgres' },
  );

  it('holds the bucket 5 s from when Discord counted it, in the process too', () => {
    expect(discord.identifies.map((c) => c.shardId).sort()).toEqual([0, 1]);
    expect(discord.breaches).toEqual([]);
  });
});
