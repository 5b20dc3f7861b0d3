import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { DetectorLease, RedisDetectorLease } from '../src/detector/detector-lease.js';
import { redisEnv, startApp, uniqueRedisPrefix, useApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { reconciled, recordedChanges } from './support/detector.js';
import {
  apiMember,
  apiUser,
  FakeDiscord,
  TEST_DISCORD_TOKEN,
  type GatewayConnection,
} from './support/fake-discord.js';
import { waitFor } from './support/ports.js';
import { ThrowawayRedis } from './support/redis-server.js';

const GUILD = '800000000000000001';
const ALICE = apiUser('700000000000000001', 'alice', { global_name: 'Alice A.' });
const LEASE_MS = 1_500;
/** Longer than any test: a lease set by the test ends when the test ends it. */
const HELD_BY_THE_TEST_MS = 60_000;

const tokenOf = (app: TestApp) =>
  app.app.get<DetectorLease, RedisDetectorLease>(DetectorLease).token;

/**
 * The lease on a Redis of the file's own, watched with MONITOR: every command on the lease
 * key, in the order Redis ran them, shows who tried, who renewed and who let go, without a
 * clock.
 */
describe('the gateway lease across instances (one Redis, one Discord)', () => {
  let server: ThrowawayRedis;
  let db: TestDatabase;
  let redis: Redis;
  let monitor: Redis;
  let discord: FakeDiscord;
  let prefix: string;
  let key: string;
  /** Every command on the lease key since the test began. */
  let commands: string[][] = [];
  const apps: TestApp[] = [];

  const start = async () => {
    const app = await startApp({
      ...redisEnv(db.url, prefix),
      REDIS_URL: server.url,
      DISCORD_TOKEN: TEST_DISCORD_TOKEN,
      DISCORD_API_URL: discord.apiUrl,
      DETECTOR_LEASE_MS: String(LEASE_MS),
    });
    apps.push(app);
    return app;
  };
  const stop = async (app: TestApp) => {
    apps.splice(apps.indexOf(app), 1);
    await app.close();
  };
  /** The `index`th IDENTIFY (0: the first), once it has a READY. */
  const identified = (index: number, timeoutMs = 10_000) =>
    waitFor(
      `IDENTIFY #${index + 1}`,
      () => discord.identifies[index]?.session && discord.identifies[index],
      { timeoutMs, intervalMs: 10 },
    );
  /** `SET key token … NX` sent by the instance of `token` from command `from` on. */
  const attempts = (token: string, from = 0) =>
    commands.slice(from).filter(([name, , value]) => name === 'set' && value === token).length;
  /** Renewals (the compare-and-expire script) sent by the instance of `token`. */
  const renewals = (token: string, from = 0) =>
    commands
      .slice(from)
      .filter(([name, , , , value]) => name === 'eval' && value === token)
      .filter(([, script]) => script.includes('pexpire')).length;
  /**
   * Samples `sample()` until the lease key stops holding `value`, keeping the samples taken
   * while it still held it: each is read before the key, so what it shows happened while the
   * key held `value`.
   */
  /**
   * Samples while the key holds `value`; `end` sees each sample that was recorded, so what it
   * ends the lease on is always among the samples returned.
   */
  const whileKeyHolds = async <T>(
    value: string,
    sample: () => T,
    end?: (recorded: T) => Promise<void>,
  ) => {
    const samples: T[] = [];
    await waitFor(
      `the lease of ${value} to end`,
      async () => {
        const now = sample();
        if ((await redis.get(key)) !== value) return true;
        samples.push(now);
        if (end) await end(now);
        return false;
      },
      { timeoutMs: HELD_BY_THE_TEST_MS, intervalMs: 10 },
    );
    return samples;
  };

  beforeAll(async () => {
    server = await ThrowawayRedis.start();
    db = await TestDatabase.create();
    redis = new Redis(server.url);
    monitor = await redis.monitor();
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args.includes(key)) commands.push([args[0].toLowerCase(), ...args.slice(1)]);
    });
  });

  beforeEach(async () => {
    prefix = uniqueRedisPrefix();
    key = `${prefix}:detector:lease`;
    commands = [];
    discord = await FakeDiscord.start({
      guilds: [{ id: GUILD, members: [apiMember(ALICE, { nick: 'Ali' })] }],
    });
  });

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await discord.close();
    await db.query('TRUNCATE name_change_events, known_names');
  });

  afterAll(async () => {
    monitor.disconnect();
    await redis.quit();
    await db.drop();
    await server.kill();
  });

  it('lets exactly one of two instances connect; when it stops, the other takes over', async () => {
    const [a, b] = await Promise.all([start(), start()]);
    const first = await identified(0);
    const holderToken = await redis.get(key);
    const holder = [a, b].find((app) => tokenOf(app) === holderToken)!;
    expect(holder).toBeDefined();
    const other = holder === a ? b : a;
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(LEASE_MS);

    // The other keeps competing and the holder keeps renewing; the other never connects.
    const from = commands.length;
    await waitFor('two more tries by the other and two renewals by the holder', () => {
      return attempts(tokenOf(other), from) >= 2 && renewals(tokenOf(holder), from) >= 2;
    });
    expect(discord.identifies).toEqual([first]);
    expect(first.closeCode).toBeUndefined();
    expect(await redis.get(key)).toBe(tokenOf(holder));

    await stop(holder);
    expect(first.closeCode).toBe(1000);
    await identified(1);
    expect(await redis.get(key)).toBe(tokenOf(other));

    discord.changeMember(GUILD, ALICE.id, { nick: 'Ally' });
    await waitFor('the change recorded', async () => (await recordedChanges(db)).length > 0);
    expect(await recordedChanges(db)).toEqual([
      { userId: ALICE.id, type: 'displayname', name: 'Ali' },
    ]);
  });

  it('releases the lease on shutdown', async () => {
    const app = await start();
    const connection = await identified(0);
    expect(await redis.get(key)).toBe(tokenOf(app));
    await stop(app);
    expect(connection.closeCode).toBe(1000);
    expect(await redis.exists(key)).toBe(0);
  });

  it('deletes on shutdown no lease but its own', async () => {
    const app = await start();
    await identified(0);
    await redis.set(key, 'another-instance', 'PX', HELD_BY_THE_TEST_MS);
    await stop(app);
    expect(await redis.get(key)).toBe('another-instance');
    await redis.del(key);
  });

  it('takes over from a holder that died without releasing once its lease expires', async () => {
    await redis.set(key, 'dead-instance', 'PX', HELD_BY_THE_TEST_MS);
    const app = await start();
    // It tries, and finds the lease held; then the dead holder's lease runs out.
    const identifies = await whileKeyHolds(
      'dead-instance',
      () => discord.identifies.length,
      async () => {
        if (attempts(tokenOf(app)) >= 1) await redis.pexpire(key, 1);
      },
    );
    expect(attempts(tokenOf(app))).toBeGreaterThanOrEqual(1);
    expect(new Set(identifies)).toEqual(new Set([0]));
    await identified(0);
    expect(await redis.get(key)).toBe(tokenOf(app));
  });

  it('stops its client as soon as it finds the lease taken, and competes again', async () => {
    const app = await start();
    const first: GatewayConnection = await identified(0);
    await reconciled(app.url, 1);
    await redis.set(key, 'usurper', 'PX', HELD_BY_THE_TEST_MS);
    const from = commands.length;
    // The client closes while the usurper holds the lease, and the instance tries again but
    // does not connect; then the usurper lets go.
    const samples = await whileKeyHolds(
      'usurper',
      () => ({ closed: first.closeCode !== undefined, identifies: discord.identifies.length }),
      async ({ closed }) => {
        if (closed && attempts(tokenOf(app), from) >= 1) await redis.del(key);
      },
    );
    expect(samples.some((s) => s.closed)).toBe(true);
    expect(new Set(samples.map((s) => s.identifies))).toEqual(new Set([1]));
    expect(first.closeCode).toBe(1000);
    await identified(1);
    expect(await redis.get(key)).toBe(tokenOf(app));
  });
});

describe('the detector without a token', () => {
  let server: ThrowawayRedis;
  let discord: FakeDiscord;
  const prefix = uniqueRedisPrefix();

  beforeAll(async () => {
    server = await ThrowawayRedis.start();
    discord = await FakeDiscord.start({ guilds: [] });
  });

  useApp({
    env: () => ({
      REDIS_URL: server.url,
      REDIS_KEY_PREFIX: prefix,
      DISCORD_TOKEN: '',
      DISCORD_API_URL: discord.apiUrl,
    }),
  });

  afterAll(async () => {
    await discord.close();
    await server.kill();
  });

  it('never calls Discord and takes no lease', async () => {
    // The lease would open its connection while the app starts, before this test's own
    // connection, which Redis therefore lists after it: the app's connections, once each
    // has its name, are all there is.
    const names = await waitFor('every connection of the app named', async () => {
      const clients = (await server.command('CLIENT', 'LIST'))
        .split('\n')
        .filter((line) => line.startsWith('id=') && !line.includes(' cmd=client|list '));
      const names = clients.map((line) => /\bname=(\S*)/.exec(line)?.[1] ?? '');
      return names.every((name) => name !== '') && names.sort();
    });
    expect(names).toEqual(['publisher', 'subscriber']);
    expect(discord.rest).toEqual([]);
    expect(discord.connections).toEqual([]);
    expect(await server.command('EXISTS', `${prefix}:detector:lease`)).toBe(':0');
  });
});
