import { useApp, type AppFixture, type AppFixtureOptions } from './app.js';
import type { TestDatabase } from './database.js';
import { reconciled } from './detector-metrics.js';
import { REDIS_URL } from './environment.js';
import {
  apiMember,
  apiUser,
  FakeDiscord,
  TEST_DISCORD_TOKEN,
  type FakeDiscordOptions,
  type FakeGuild,
} from './fake-discord.js';

/** The detector tests' servers and first users (a test that changes names adds its own: `newUser`). */
export const GUILD_A = '800000000000000001';
export const GUILD_B = '800000000000000002';
export const ALICE = apiUser('700000000000000001', 'alice', { global_name: 'Alice A.' });
export const BOB = apiUser('700000000000000002', 'bob');
export const CAROL = apiUser('700000000000000003', 'carol', { discriminator: '1234' });
export const DAVE = apiUser('700000000000000004', 'dave', { global_name: 'Dave' });

/**
 * Two servers: A with all four (Alice as "Ali", Carol as "Caz"), B with Alice and Dave (as
 * "D"), on shard `shardOfB` (A is on shard 0).
 */
export function twoServers(shardOfB = 0): FakeGuild[] {
  return [
    {
      id: GUILD_A,
      members: [
        apiMember(ALICE, { nick: 'Ali' }),
        apiMember(BOB),
        apiMember(CAROL, { nick: 'Caz' }),
        apiMember(DAVE),
      ],
    },
    { id: GUILD_B, shardId: shardOfB, members: [apiMember(ALICE), apiMember(DAVE, { nick: 'D' })] },
  ];
}

/**
 * The application of a describe block with the detector on, its Discord a fake of the
 * block's own holding `world` (listening before the app starts, closed after it); the
 * block's tests begin once the app has seen every server of the world in full. `options`
 * as for `useApp`; its `env` comes on top of the detector's.
 */
export function useDetectorApp(
  world: FakeDiscordOptions,
  options: AppFixtureOptions = {},
): { fx: AppFixture; discord: FakeDiscord } {
  const discord = new FakeDiscord(world);
  beforeAll(() => discord.listen());
  const fx = useApp({
    ...options,
    env: async (db) => ({
      DISCORD_TOKEN: TEST_DISCORD_TOKEN,
      DISCORD_API_URL: discord.apiUrl,
      ...(typeof options.env === 'function' ? await options.env(db) : options.env),
    }),
  });
  // Longer than `reconciled`'s own 30 s, so that its message says what did not happen.
  beforeAll(async () => {
    await reconciled(fx.url, world.guilds.length);
  }, 45_000);
  afterAll(() => discord.close());
  return { fx, discord };
}

/**
 * The environment of the service as a process (`ServiceProcess`) with the detector on: real
 * Postgres and Redis under `prefix`, Discord at `discord`.
 */
export function detectorProcessEnv(
  db: TestDatabase,
  discord: FakeDiscord,
  prefix: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    DISCORD_TOKEN: TEST_DISCORD_TOKEN,
    DISCORD_API_URL: discord.apiUrl,
    ...extra,
  };
}
