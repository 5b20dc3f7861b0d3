import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { LeaseCompetition } from '../src/redis/lease-competition.js';
import type { Lease } from '../src/redis/leases.js';
import { RedisLeases } from '../src/redis/redis-leases.js';
import { uniqueRedisPrefix } from './support/app.js';
import { REDIS_URL } from './support/environment.js';
import { waitFor } from './support/ports.js';

/**
 * The one lease implementation, on the real Redis, as two instances would use it: one
 * RedisLeases per instance, each with its own connection.
 */
describe('leases in Redis', () => {
  const connections: Redis[] = [];
  let redis: Redis;
  let prefix: string;

  const instance = () =>
    new RedisLeases(() => {
      const connection = new Redis(REDIS_URL);
      connections.push(connection);
      return connection;
    }, prefix);

  beforeAll(() => {
    redis = new Redis(REDIS_URL);
    prefix = uniqueRedisPrefix();
  });

  afterAll(async () => {
    await Promise.all([redis, ...connections].map((connection) => connection.quit()));
  });

  it('gives a lease to one instance at a time, and to the other once released', async () => {
    const [a, b] = [instance(), instance()];
    const taken = await a.tryAcquire('exclusive', 10_000);
    const refused = await b.tryAcquire('exclusive', 10_000);
    expect(taken.lease?.name).toBe('exclusive');
    expect(refused.lease).toBeUndefined();
    expect(!refused.lease && refused.heldForMs).toBeGreaterThan(9_000);
    expect(await redis.get(a.keyOf('exclusive'))).toBe(a.token);

    await taken.lease!.release();
    expect(await redis.exists(a.keyOf('exclusive'))).toBe(0);
    const retaken = await b.tryAcquire('exclusive', 10_000);
    expect(await redis.get(b.keyOf('exclusive'))).toBe(b.token);
    await retaken.lease!.release();
  });

  it('keeps every lease it holds alive, renewing them all in one round trip', async () => {
    const leases = instance();
    const monitor = await redis.monitor();
    const renewals: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      // This test's keys only: MONITOR sees every client of the Redis other suites share.
      const ours = args[3]?.startsWith(leases.keyOf(''));
      if (args[0].toLowerCase() === 'eval' && args[1].includes('pexpire') && ours) {
        renewals.push(args);
      }
    });
    const held: Lease[] = [];
    for (const name of ['shard:0', 'shard:1', 'endpoint:42']) {
      held.push((await leases.tryAcquire(name, 1_500)).lease!);
    }
    // Well past the 1.5 s every lease was taken for: only the renewals keep them.
    await waitFor('four rounds of renewals', () => renewals.length >= 4, { timeoutMs: 10_000 });
    for (const lease of held) {
      expect(lease.signal.aborted).toBe(false);
      expect(await redis.get(leases.keyOf(lease.name))).toBe(leases.token);
    }
    for (const round of renewals) expect(round[2]).toBe('3');
    monitor.disconnect();
    await Promise.all(held.map((lease) => lease.release()));
  });

  it('tells the holder at once when another instance holds its key', async () => {
    const leases = instance();
    const { lease } = await leases.tryAcquire('taken-over', 600);
    await redis.set(leases.keyOf('taken-over'), 'another-instance', 'PX', 60_000);
    await waitFor('the lease to be lost', () => lease!.signal.aborted, { timeoutMs: 5_000 });
    // Releasing what it lost deletes nothing of the other's.
    await lease!.release();
    expect(await redis.get(leases.keyOf('taken-over'))).toBe('another-instance');
    await redis.del(leases.keyOf('taken-over'));
  });

  it('puts every key in one slot of a cluster, whatever the lease', () => {
    const leases = instance();
    // Redis Cluster hashes only what the first {…} of a key holds.
    const hashTags = ['detector', 'shard:17', 'endpoint:abc'].map(
      (name) => /\{([^}]*)\}/.exec(leases.keyOf(name))?.[1],
    );
    expect(hashTags).toEqual([`${prefix}:lease`, `${prefix}:lease`, `${prefix}:lease`]);
  });

  it('competes until it wins, and competes again after a loss', async () => {
    const [a, b] = [instance(), instance()];
    const { lease: first } = await a.tryAcquire('competed', 900);
    const won: Lease[] = [];
    const competition = new LeaseCompetition(b, 'competed', 900, {
      acquired: (lease) => won.push(lease),
    });
    competition.start();
    await first!.release();
    await waitFor('b to win once a let go', () => won.length === 1, { timeoutMs: 5_000 });
    await redis.set(b.keyOf('competed'), 'usurper', 'PX', 200);
    await waitFor('b to lose it, then win it again', () => won.length === 2, { timeoutMs: 5_000 });
    expect(won[0].signal.aborted).toBe(true);
    expect(won[1].signal.aborted).toBe(false);
    await competition.stop();
    expect(await redis.exists(b.keyOf('competed'))).toBe(0);
  });
});
