import { redisEnv, startApp, uniqueRedisPrefix, type TestApp } from './app.js';
import { TestDatabase } from './database.js';
import { recordedChanges } from './detector.js';
import {
  apiMember,
  apiUser,
  FakeDiscord,
  TEST_DISCORD_TOKEN,
  type FakeDiscordOptions,
  type FakeGuild,
} from './fake-discord.js';
import { metric } from './metrics.js';
import { waitFor } from './ports.js';

export const SHARD_LEASE_MS = 1_500;

/** Server `i` (800000000000000101 on) on shard `i % shardCount`, one member each. */
export function serverPerShard(count: number, shardCount = count): FakeGuild[] {
  return Array.from({ length: count }, (_, i) => ({
    id: String(800_000_000_000_000_101n + BigInt(i)),
    shardId: i % shardCount,
    members: [apiMember(apiUser(String(760_000_000_000_000_101n + BigInt(i)), `member${i}`))],
  }));
}

/** Renames each server's first member: `member<i>-<suffix>`, one change per server. */
export function renameEach(discord: FakeDiscord, suffix: string): void {
  for (const guild of discord.world.guilds) {
    const { user } = guild.members[0];
    discord.changeUser(user.id, { username: `${user.username.replace(/-.*/, '')}-${suffix}` });
  }
}

/** An instance's figures: the shards it runs, and the sessions it opened. */
export async function shardFigures(app: { url: string }) {
  const of = (series: string) => metric(app.url, `name_history_detector_${series}`);
  return {
    held: await of('shards_held'),
    identifies: await of('session_starts_total{kind="identify"}'),
    resumes: await of('session_starts_total{kind="resume"}'),
  };
}

/**
 * In-process instances running the detector over the shards of a fake Discord, sharing a
 * Postgres database and Redis (DETECTOR_LEASE_MS 1.5 s). Each test gets a fresh Discord with
 * `world` and a fresh key prefix; its instances are closed after it (as at SIGTERM). Call in
 * a describe block.
 */
export function useShardedDetector(world: () => FakeDiscordOptions) {
  let db: TestDatabase;
  let discord: FakeDiscord;
  let prefix: string;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    db = await TestDatabase.create();
  });

  beforeEach(async () => {
    prefix = uniqueRedisPrefix();
    discord = await FakeDiscord.start(world());
  });

  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
    await discord.close();
    await db.query(
      'TRUNCATE name_change_events, known_users, known_nicknames, detector_shard_progress CASCADE',
    );
  });

  afterAll(() => db.drop());

  const fixture = {
    get db() {
      return db;
    },
    get discord() {
      return discord;
    },
    get apps(): readonly TestApp[] {
      return apps;
    },
    start: async (env: Record<string, string> = {}) => {
      const app = await startApp({
        ...redisEnv(db.url, prefix),
        DISCORD_TOKEN: TEST_DISCORD_TOKEN,
        DISCORD_API_URL: discord.apiUrl,
        DETECTOR_LEASE_MS: String(SHARD_LEASE_MS),
        ...env,
      });
      apps.push(app);
      return app;
    },
    /** Closes the instance (what SIGTERM does). */
    stop: async (app: TestApp) => {
      apps.splice(apps.indexOf(app), 1);
      await app.close();
    },
    /**
     * Waits until every shard is live and the running instances hold, sorted, `spread`
     * shards (e.g. [1, 1, 2]); returns their figures, in the order of `fixture.apps`.
     */
    spreadAs: async (spread: number[], timeoutMs = 30_000) =>
      waitFor(
        `shards spread as ${spread.join(', ')}`,
        async () => {
          const figures = await Promise.all(apps.map((app) => shardFigures(app)));
          const held = figures.map((f) => f.held).sort((a, b) => a - b);
          const live = Array.from({ length: discord.shardCount }, (_, i) => discord.isLive(i));
          return live.every(Boolean) && held.join() === spread.join() && figures;
        },
        { timeoutMs, intervalMs: 100 },
      ),
    /** Renames each server's member (a new username); waits for as many stored events. */
    renameEach: async (suffix: string) => {
      const before = (await recordedChanges(db)).length;
      renameEach(discord, suffix);
      const count = discord.world.guilds.length;
      await waitFor(`${count} renames recorded`, async () => {
        return (await recordedChanges(db)).length >= before + count;
      });
      return (await recordedChanges(db)).slice(before);
    },
  };
  return fixture;
}
