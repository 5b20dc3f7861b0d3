import { Redis } from 'ioredis';
import { Leases } from '../../src/redis/leases.js';
import type { RedisLeases } from '../../src/redis/redis-leases.js';
import { redisEnv, startApp, uniqueRedisPrefix, type TestApp } from './app.js';
import { TestDatabase } from './database.js';
import { ALICE, GUILD_A } from './detector-app.js';
import {
  apiMember,
  FakeDiscord,
  TEST_DISCORD_TOKEN,
  type GatewayConnection,
} from './fake-discord.js';
import { waitFor } from './ports.js';
import { ThrowawayRedis } from './redis-server.js';

export const LEASE_MS = 1_500;
/** Longer than any test: a lease set by the test ends when the test ends it. */
export const HELD_BY_THE_TEST_MS = 60_000;

/** The lease value of an instance (its token). */
export const tokenOf = (app: TestApp) => app.app.get<Leases, RedisLeases>(Leases).token;

/**
 * Instances competing for the lease of the only shard (DETECTOR_LEASE_MS 1.5 s), on a Redis of
 * the file's own watched with MONITOR: every command on the lease key (and the old single
 * lease's), in the order Redis ran
 * them, shows who tried, who renewed and who let go, without a clock. Each test gets a fresh
 * key and a fresh fake Discord with one server (Alice in it as "Ali"); its instances are
 * closed after it. Call in a describe block.
 */
export function useLeaseContest() {
  let server: ThrowawayRedis;
  let db: TestDatabase;
  let redis: Redis;
  let monitor: Redis;
  let discord: FakeDiscord;
  let prefix: string;
  let key: string;
  /** Every command on the lease keys since the test began. */
  let commands: string[][] = [];
  const apps: TestApp[] = [];

  beforeAll(async () => {
    server = await ThrowawayRedis.start();
    db = await TestDatabase.create();
    redis = new Redis(server.url);
    monitor = await redis.monitor();
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args.includes(key)) {
        commands.push([args[0].toLowerCase(), ...args.slice(1)]);
      }
    });
  });

  beforeEach(async () => {
    prefix = uniqueRedisPrefix();
    key = `{${prefix}:lease}:detector-shard:0`;
    commands = [];
    discord = await FakeDiscord.start({
      guilds: [{ id: GUILD_A, members: [apiMember(ALICE, { nick: 'Ali' })] }],
    });
  });

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await discord.close();
    // CASCADE: other modules' tables refer to the events (webhook deliveries).
    await db.query(
      'TRUNCATE name_change_events, known_users, known_nicknames, detector_shard_progress CASCADE',
    );
  });

  afterAll(async () => {
    monitor.disconnect();
    await redis.quit();
    await db.drop();
    await server.kill();
  });

  return {
    get db() {
      return db;
    },
    /** A client of the lease's Redis. */
    get redis() {
      return redis;
    },
    get discord() {
      return discord;
    },
    /** The lease of shard 0, the only shard. */
    get key() {
      return key;
    },
    /** How many commands on the key Redis ran since the test began. */
    get commandCount() {
      return commands.length;
    },
    /** An instance with the detector on. */
    start: async () => {
      const app = await startApp({
        ...redisEnv(db.url, prefix),
        REDIS_URL: server.url,
        DISCORD_TOKEN: TEST_DISCORD_TOKEN,
        DISCORD_API_URL: discord.apiUrl,
        DETECTOR_LEASE_MS: String(LEASE_MS),
      });
      apps.push(app);
      return app;
    },
    stop: async (app: TestApp) => {
      apps.splice(apps.indexOf(app), 1);
      await app.close();
    },
    /** Once the instance of `token` holds shard 0 and it is connected. */
    running: (token: string) =>
      waitFor(`shard 0 run by ${token}`, async () => {
        return discord.isLive(0) && (await redis.get(key)) === token;
      }),
    /** The `index`th IDENTIFY (0: the first), once it has a READY. */
    identified: (index: number, timeoutMs = 10_000): Promise<GatewayConnection> =>
      waitFor(
        `IDENTIFY #${index + 1}`,
        () => discord.identifies[index]?.session && discord.identifies[index],
        { timeoutMs, intervalMs: 10 },
      ),
    /** Tries (the `SET key token NX` script) sent by the instance of `token` from command `from` on. */
    attempts: (token: string, from = 0) =>
      commands
        .slice(from)
        .filter(([name, , , k, value]) => name === 'eval' && k === key && value === token)
        .filter(([, script]) => script.includes("'NX'")).length,
    /**
     * Renewals (the compare-and-expire script) sent by the instance of `token`: one script
     * over every key the instance holds (the detector's and others', a consumer's), the token
     * after the keys.
     */
    renewals: (token: string, from = 0) =>
      commands
        .slice(from)
        .filter(([name, script]) => name === 'eval' && script.includes('pexpire'))
        .filter(([, , ...args]) => args.includes(key) && args.includes(token)).length,
    /**
     * Samples while the key holds `value`, keeping the samples taken while it still held it:
     * each is read before the key, so what it shows happened while the key held `value`.
     * `end` sees each sample that was recorded, so what it ends the lease on is always among
     * the samples returned.
     */
    whileKeyHolds: async <T>(
      value: string,
      sample: () => T,
      end?: (recorded: T) => Promise<void>,
    ): Promise<T[]> => {
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
    },
  };
}
