/**
 * An instance killed (SIGKILL) while it runs shards: the others take them over once their
 * leases expire, resuming the dead instance's sessions (no identify), and every change made
 * meanwhile is recorded exactly once. Three instances as processes (`node dist/main.js`),
 * four shards; one Discord (the fake).
 */
import { uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { recordedChanges } from './support/detector.js';
import { detectorProcessEnv } from './support/detector-app.js';
import { serverPerShard, shardFigures } from './support/detector-shards.js';
import { FakeDiscord } from './support/fake-discord.js';
import { waitFor } from './support/ports.js';
import { ServiceProcess } from './support/service-process.js';

const LEASE_MS = 2_000;

describe('four shards over three instances, one of them killed', () => {
  let db: TestDatabase;
  let discord: FakeDiscord;
  const services: ServiceProcess[] = [];

  beforeAll(async () => {
    db = await TestDatabase.create();
    discord = await FakeDiscord.start({
      shardCount: 4,
      maxConcurrency: 2,
      guilds: serverPerShard(4),
    });
  });

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop('SIGKILL')));
    await discord.close();
    await db.drop();
  });

  /** The instances' shards held, once every shard is live and they hold `spread` (sorted). */
  const spreadAs = (running: ServiceProcess[], spread: number[], timeoutMs: number) =>
    waitFor(
      `shards spread as ${spread.join(', ')}`,
      async () => {
        const held = await Promise.all(running.map(async (s) => (await shardFigures(s)).held));
        const live = [0, 1, 2, 3].every((shard) => discord.isLive(shard));
        return live && [...held].sort().join() === spread.join() && held;
      },
      { timeoutMs, intervalMs: 100 },
    );

  /** Renames every server's member (a new username each): one change per shard. */
  const renameEach = (suffix: string) => {
    for (const guild of discord.world.guilds) {
      const { user } = guild.members[0];
      discord.changeUser(user.id, { username: `${user.username.replace(/-.*/, '')}-${suffix}` });
    }
  };

  it('takes its shards over within the lease, resumes them, and records every change once', async () => {
    const env = detectorProcessEnv(db, discord, uniqueRedisPrefix(), {
      DETECTOR_LEASE_MS: String(LEASE_MS),
    });
    services.push(...(await Promise.all([0, 1, 2].map(() => ServiceProcess.start(env)))));
    const held = await spreadAs(services, [1, 1, 2], 60_000);
    renameEach('live');
    await waitFor('4 live changes', async () => (await recordedChanges(db)).length === 4);
    const identifies = discord.identifies.length;

    const victim = services[held.indexOf(2)];
    expect(await victim.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    // Its two shards have nobody: these wait in their sessions.
    renameEach('meanwhile');
    const survivors = services.filter((s) => s !== victim);
    // Within the lease, and a few heartbeats.
    await spreadAs(survivors, [2, 2], LEASE_MS + 8_000);

    await waitFor('8 changes', async () => (await recordedChanges(db)).length >= 8);
    const changes = await recordedChanges(db);
    expect(changes).toHaveLength(8);
    expect(
      changes
        .slice(4)
        .map((c) => c.name)
        .sort(),
    ).toEqual(['member0-live', 'member1-live', 'member2-live', 'member3-live']);
    // Resumed, not identified anew; never a shard connected twice.
    expect(discord.identifies).toHaveLength(identifies);
    const resumes = await Promise.all(survivors.map(async (s) => (await shardFigures(s)).resumes));
    expect(resumes.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(2);
    expect(discord.breaches).toEqual([]);
  }, 120_000);
});
