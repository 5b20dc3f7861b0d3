/**
 * A shard's lease across instances: exactly one connects it, and another takes over when it
 * stops, dies or loses the lease. One Redis watched with MONITOR, one fake Discord (one shard) per test.
 * Several shards over several instances: detector-shards.
 */
import { recordedChanges } from './support/detector.js';
import { ALICE, GUILD_A } from './support/detector-app.js';
import {
  HELD_BY_THE_TEST_MS,
  LEASE_MS,
  tokenOf,
  useLeaseContest,
} from './support/detector-lease.js';
import { reconciled } from './support/detector-metrics.js';
import type { GatewayConnection } from './support/fake-discord.js';
import { waitFor } from './support/ports.js';

describe("a shard's lease across instances (one Redis, one Discord)", () => {
  const lease = useLeaseContest();

  it('lets exactly one of two instances connect; when it stops, the other takes over', async () => {
    const [a, b] = await Promise.all([lease.start(), lease.start()]);
    const first = await lease.identified(0);
    const holderToken = await lease.redis.get(lease.key);
    const holder = [a, b].find((app) => tokenOf(app) === holderToken)!;
    expect(holder).toBeDefined();
    const other = holder === a ? b : a;
    const ttl = await lease.redis.pttl(lease.key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(LEASE_MS);

    // The holder keeps renewing; the other never connects.
    const from = lease.commandCount;
    await waitFor('two renewals by the holder', () => lease.renewals(tokenOf(holder), from) >= 2);
    expect(lease.discord.identifies).toEqual([first]);
    expect(lease.discord.connections).toEqual([first]);
    expect(first.closeCode).toBeUndefined();
    expect(await lease.redis.get(lease.key)).toBe(tokenOf(holder));

    // Closed keeping the session resumable (4200), and the lease released after it.
    await lease.stop(holder);
    expect(first.closeCode).toBe(4200);
    await lease.running(tokenOf(other));

    lease.discord.changeMember(GUILD_A, ALICE.id, { nick: 'Ally' });
    await waitFor('the change recorded', async () => (await recordedChanges(lease.db)).length > 0);
    expect(await recordedChanges(lease.db)).toEqual([
      { userId: ALICE.id, type: 'displayname', name: 'Ali' },
    ]);
  });

  it('releases the lease on shutdown', async () => {
    const app = await lease.start();
    const connection = await lease.identified(0);
    expect(await lease.redis.get(lease.key)).toBe(tokenOf(app));
    await lease.stop(app);
    expect(connection.closeCode).toBe(4200);
    expect(await lease.redis.exists(lease.key)).toBe(0);
  });

  it('deletes on shutdown no lease but its own', async () => {
    const app = await lease.start();
    await lease.identified(0);
    await lease.redis.set(lease.key, 'another-instance', 'PX', HELD_BY_THE_TEST_MS);
    await lease.stop(app);
    expect(await lease.redis.get(lease.key)).toBe('another-instance');
    await lease.redis.del(lease.key);
  });

  it('takes over from a holder that died without releasing once its lease expires', async () => {
    await lease.redis.set(lease.key, 'dead-instance', 'PX', HELD_BY_THE_TEST_MS);
    const app = await lease.start();
    // It tries, and finds the lease held; then the dead holder's lease runs out.
    const identifies = await lease.whileKeyHolds(
      'dead-instance',
      () => lease.discord.identifies.length,
      async () => {
        if (lease.attempts(tokenOf(app)) >= 1) await lease.redis.pexpire(lease.key, 1);
      },
    );
    expect(lease.attempts(tokenOf(app))).toBeGreaterThanOrEqual(1);
    expect(new Set(identifies)).toEqual(new Set([0]));
    await lease.identified(0);
    expect(await lease.redis.get(lease.key)).toBe(tokenOf(app));
  });

  it('stops its client as soon as it finds the lease taken, and competes again', async () => {
    const app = await lease.start();
    const first: GatewayConnection = await lease.identified(0);
    await reconciled(app.url, 1);
    await lease.redis.set(lease.key, 'usurper', 'PX', HELD_BY_THE_TEST_MS);
    const from = lease.commandCount;
    // The client closes while the usurper holds the lease, and the instance tries again but
    // does not connect; then the usurper lets go.
    const samples = await lease.whileKeyHolds(
      'usurper',
      () => ({
        closed: first.closeCode !== undefined,
        identifies: lease.discord.identifies.length,
      }),
      async ({ closed }) => {
        if (closed && lease.attempts(tokenOf(app), from) >= 1) await lease.redis.del(lease.key);
      },
    );
    expect(samples.some((s) => s.closed)).toBe(true);
    expect(new Set(samples.map((s) => s.identifies))).toEqual(new Set([1]));
    expect(first.closeCode).toBe(4200);
    await lease.running(tokenOf(app));
  });
});
