/**
 * An instance killed (SIGKILL) while it runs shards: the others take them over once their
 * leases expire, resuming the dead instance's sessions (no identify), and every change made
 * meanwhile is recorded exactly once, as is every change it had stored before it died (which
 * Discord replays from the sequence last saved). Instances as processes (`node dist/main.js`);
 * one Discord (the fake).
 */
import { Redis } from 'ioredis';
import { uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { byUser, recordedChanges } from './support/detector.js';
import { detectorProcessEnv } from './support/detector-app.js';
import { renameEach, serverPerShard, shardFigures } from './support/detector-shards.js';
import { FakeDiscord } from './support/fake-discord.js';
import { metric } from './support/metrics.js';
import { waitFor } from './support/ports.js';
import { REDIS_URL } from './support/environment.js';
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

  it('takes its shards over within the lease, resumes them, and records every change once', async () => {
    const env = detectorProcessEnv(db, discord, uniqueRedisPrefix(), {
      DETECTOR_LEASE_MS: String(LEASE_MS),
    });
    services.push(...(await Promise.all([0, 1, 2].map(() => ServiceProcess.start(env)))));
    const held = await spreadAs(services, [1, 1, 2], 60_000);
    renameEach(discord, 'live');
    await waitFor('4 live changes', async () => (await recordedChanges(db)).length === 4);
    const identifies = discord.identifies.length;

    const victim = services[held.indexOf(2)];
    expect(await victim.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    // Its two shards have nobody: these wait in their sessions.
    renameEach(discord, 'meanwhile');
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

describe('a holder killed before it saved how far its shard was stored', () => {
  let db: TestDatabase;
  let discord: FakeDiscord;
  let redis: Redis;
  const services: ServiceProcess[] = [];

  beforeAll(async () => {
    db = await TestDatabase.create();
    redis = new Redis(REDIS_URL);
    discord = await FakeDiscord.start({
      shardCount: 2,
      maxConcurrency: 2,
      guilds: serverPerShard(2),
    });
  });

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop('SIGKILL')));
    await discord.close();
    await redis.quit();
    await db.drop();
  });

  const stored = (count: number) =>
    waitFor(`${count} changes`, async () => (await recordedChanges(db)).length >= count);

  it('has Discord replay what it stored, and records none of it again', async () => {
    const prefix = uniqueRedisPrefix();
    const env = detectorProcessEnv(db, discord, prefix, { DETECTOR_LEASE_MS: String(LEASE_MS) });
    services.push(...(await Promise.all([0, 1].map(() => ServiceProcess.start(env)))));
    await waitFor('a shard each, live', async () => {
      const held = await Promise.all(services.map(async (s) => (await shardFigures(s)).held));
      return held.join() === '1,1' && [0, 1].every((shard) => discord.isLive(shard));
    });
    // The sessions as saved before the renames: what Redis holds when a holder dies within
    // the 250 ms before its next save (rewritten below, so that it does not depend on timing).
    const sessionKey = (shard: number) => `{${prefix}:detector}:session:${shard}`;
    const saved = await Promise.all(
      [0, 1].map((shard) => redis.hget(sessionKey(shard), 'session')),
    );
    expect(saved.map((session) => (JSON.parse(session!) as { shardId: number }).shardId)).toEqual([
      0, 1,
    ]);
    // Two changes of one name, each stored: a replay of "b" is older than the known "c".
    renameEach(discord, 'b');
    await stored(2);
    renameEach(discord, 'c');
    await stored(4);
    const identifies = discord.identifies.length;

    const [victim, survivor] = services;
    expect(await victim.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    await Promise.all(
      saved.map((session, shard) => redis.hset(sessionKey(shard), 'session', session!)),
    );
    renameEach(discord, 'd');
    await waitFor(
      'both shards on the survivor, resumed, every update compared',
      async () => {
        const { held, resumes } = await shardFigures(survivor);
        const backlog = await metric(survivor.url, 'name_history_detector_backlog{queue="live"}');
        const live = [0, 1].every((shard) => discord.isLive(shard));
        return (
          held === 2 &&
          resumes >= 1 &&
          live &&
          backlog === 0 &&
          (await recordedChanges(db)).length >= 6
        );
      },
      { timeoutMs: LEASE_MS + 10_000, intervalMs: 100 },
    );

    const [first, second] = discord.world.guilds.map((g) => g.members[0].user.id);
    const changes = (userId: string, name: string) =>
      ['', '-b', '-c'].map((suffix) => ({ userId, type: 'username', name: `${name}${suffix}` }));
    expect(byUser(await recordedChanges(db))).toEqual([
      ...changes(first, 'member0'),
      ...changes(second, 'member1'),
    ]);
    expect(discord.identifies).toHaveLength(identifies);
    expect(discord.breaches).toEqual([]);
  }, 60_000);
});
