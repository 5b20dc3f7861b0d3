/**
 * What the detector finds after a time it was not watching, through the built service
 * (`node dist/main.js`) as deployments run it: restarted, killed, taking over from another
 * instance, on a server of 5,000 members. Discord is the fake in test/support, reached over
 * the network through DISCORD_API_URL.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { PUBLISH_LOCK_KEY } from '../src/name-events/name-change-event.repository.js';
import { uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import {
  detectorFigures,
  reconciled,
  recordedChanges,
  recordedEvents,
  type DetectorFigures,
  type RecordedEvent,
} from './support/detector.js';
import { REDIS_URL } from './support/environment.js';
import {
  apiMember,
  apiUser,
  FakeDiscord,
  manyMembers,
  TEST_DISCORD_TOKEN,
} from './support/fake-discord.js';
import { waitFor } from './support/ports.js';
import { ServiceProcess } from './support/service-process.js';

const GUILD_A = '800000000000000001';
const GUILD_B = '800000000000000002';
const BIG = '800000000000000003';
const ALICE = apiUser('700000000000000001', 'alice', { global_name: 'Alice A.' });
const BOB = apiUser('700000000000000002', 'bob');
const ARTIFACTS = fileURLToPath(new URL('artifacts/', import.meta.url));

/** The service's environment: real Postgres and Redis, Discord at `discord`. */
function serviceEnv(db: TestDatabase, discord: FakeDiscord, prefix: string, extra = {}) {
  return {
    DATABASE_URL: db.url,
    REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    DISCORD_TOKEN: TEST_DISCORD_TOKEN,
    DISCORD_API_URL: discord.apiUrl,
    ...extra,
  };
}

async function detectorBacklog(service: ServiceProcess) {
  return (await detectorFigures(service.url)).backlog;
}

describe('changes made while the service was stopped', () => {
  let db: TestDatabase;
  let discord: FakeDiscord;
  const services: ServiceProcess[] = [];
  const prefix = uniqueRedisPrefix();

  const start = async () => {
    const service = await ServiceProcess.start(serviceEnv(db, discord, prefix));
    services.push(service);
    return service;
  };

  beforeAll(async () => {
    db = await TestDatabase.create();
    discord = await FakeDiscord.start({
      guilds: [
        { id: GUILD_A, members: [apiMember(ALICE, { nick: 'Ali' }), apiMember(BOB)] },
        { id: GUILD_B, members: [apiMember(ALICE, { nick: 'Alice in B' })] },
      ],
    });
  });

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop('SIGKILL')));
    await discord.close();
    await db.drop();
  });

  it('are each recorded exactly once after it starts again, and never again', async () => {
    const first = await start();
    await reconciled(first.url, 2);
    expect(await recordedEvents(db)).toEqual([]);
    expect(await first.stop('SIGTERM')).toEqual({ code: 0, signal: null });

    discord.changeUser(ALICE.id, { username: 'alice2', global_name: 'Alicia' });
    discord.changeMember(GUILD_A, ALICE.id, { nick: 'Al' });
    discord.changeMember(GUILD_B, ALICE.id, { nick: null });
    discord.changeUser(BOB.id, { avatar: 'b0b' });
    const restartedAt = new Date();

    const second = await start();
    expect(await reconciled(second.url, 2)).toMatchObject({
      reconciliations: 2,
      reconciledChanges: 4,
    });
    const events = await recordedEvents(db);
    expect(events.map(({ userId, type, name }) => ({ userId, type, name }))).toEqual(
      expect.arrayContaining([
        { userId: ALICE.id, type: 'username', name: 'alice' },
        { userId: ALICE.id, type: 'displayname', name: 'Alice A.' },
        { userId: ALICE.id, type: 'displayname', name: 'Ali' },
        { userId: ALICE.id, type: 'displayname', name: 'Alice in B' },
      ]),
    );
    expect(events).toHaveLength(4);
    // The time of detection: after the restart, not when the change was made.
    for (const { changedAt } of events) {
      expect(new Date(changedAt).getTime()).toBeGreaterThanOrEqual(restartedAt.getTime());
    }
    expect(await second.stop('SIGTERM')).toEqual({ code: 0, signal: null });

    const third = await start();
    expect(await reconciled(third.url, 2)).toMatchObject({
      reconciliations: 2,
      reconciledChanges: 0,
    });
    expect(await recordedEvents(db)).toEqual(events);
  }, 120_000);
});

describe('two instances, the lease holder killed', () => {
  let db: TestDatabase;
  let discord: FakeDiscord;
  const services: ServiceProcess[] = [];

  beforeAll(async () => {
    db = await TestDatabase.create();
    discord = await FakeDiscord.start({
      guilds: [{ id: GUILD_A, members: [apiMember(ALICE, { nick: 'Ali' }), apiMember(BOB)] }],
    });
  });

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop('SIGKILL')));
    await discord.close();
    await db.drop();
  });

  it('the other takes over, reconciles, and nothing is recorded twice', async () => {
    const env = serviceEnv(db, discord, uniqueRedisPrefix(), { DETECTOR_LEASE_MS: '2000' });
    services.push(...(await Promise.all([ServiceProcess.start(env), ServiceProcess.start(env)])));
    await waitFor('one instance connected', () => discord.identifies[0]?.session, {
      timeoutMs: 20_000,
    });
    const holder = await waitFor('the holder to reconcile', async () => {
      const runs = await Promise.all(services.map((s) => detectorFigures(s.url)));
      return services.find((_, i) => runs[i].reconciliations === 1);
    });
    const other = services.find((s) => s !== holder)!;

    discord.changeMember(GUILD_A, ALICE.id, { nick: 'Ally' });
    await waitFor('the live change recorded', async () => (await recordedEvents(db)).length === 1);
    expect(await holder.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });

    // Nobody is connected: these wait in the dead instance's session, which nobody resumes.
    discord.changeUser(BOB.id, { username: 'bob2' });
    discord.changeMember(GUILD_A, ALICE.id, { nick: 'Alley' });

    const run = await reconciled(other.url, 1);
    expect(discord.identifies).toHaveLength(2);
    expect(run).toMatchObject({ reconciliations: 1, reconciledMembers: 2, reconciledChanges: 2 });
    // Found in the order of GUILD_CREATE's members; the change recorded live is not again.
    expect(await recordedChanges(db)).toEqual([
      { userId: ALICE.id, type: 'displayname', name: 'Ali' },
      { userId: ALICE.id, type: 'displayname', name: 'Ally' },
      { userId: BOB.id, type: 'username', name: 'bob' },
    ]);
  }, 90_000);
});

describe('a server of 5,000 members, in member chunks', () => {
  let db: TestDatabase;
  let discord: FakeDiscord;
  const services: ServiceProcess[] = [];
  const prefix = uniqueRedisPrefix();
  /** 4,999 members and the bot. */
  const members = manyMembers(4_999, 710000000000000000n, 'member');
  const figures: Record<string, number> = {};

  const start = async () => {
    const service = await ServiceProcess.start(serviceEnv(db, discord, prefix));
    services.push(service);
    return service;
  };

  /** While stopped, changes 50 members, 100 apart from `offset` on: a username, a global
   * display name or a nickname in turn. Returns the names the history must record. */
  const changeFifty = (offset: number) =>
    Array.from({ length: 50 }, (_, i) => {
      const index = offset + i * 100;
      const { user, nick } = discord.guild(BIG).members[index];
      switch (i % 3) {
        case 0:
          discord.changeUser(user.id, { username: `renamed${index}` });
          return { userId: user.id, type: 'username', name: user.username };
        case 1:
          discord.changeUser(user.id, { global_name: `Renamed ${index}` });
          return { userId: user.id, type: 'displayname', name: user.global_name! };
        default:
          discord.changeMember(BIG, user.id, { nick: `Renamed ${index}` });
          return { userId: user.id, type: 'displayname', name: nick! };
      }
    });

  /** Events stored before the test began: the test reads only those after. */
  const storedSince = async (before: Set<string>) =>
    (await recordedEvents(db)).filter((e) => !before.has(e.id));
  const storedIds = async () => new Set((await recordedEvents(db)).map((e) => e.id));

  // The first sighting, which the other tests start from: each changes members of its own.
  let firstSighting: {
    run: DetectorFigures;
    events: RecordedEvent[];
    known: unknown[];
  };

  beforeAll(async () => {
    db = await TestDatabase.create();
    discord = await FakeDiscord.start({
      guilds: [{ id: BIG, members }],
      memberRequestWindowMs: 2_000,
    });
    const service = await start();
    const run = await reconciled(service.url, 1);
    firstSighting = {
      run,
      events: await recordedEvents(db),
      known: await db.query('SELECT count(*)::int AS n FROM known_names'),
    };
    figures.firstSighting = Math.round(run.reconcileMs);
    await Promise.all(services.splice(0).map((s) => s.stop('SIGTERM')));
  }, 60_000);

  afterEach(async () => {
    await Promise.all(services.splice(0).map((s) => s.stop('SIGTERM')));
  });

  afterAll(async () => {
    await discord.close();
    await db.drop();
    mkdirSync(ARTIFACTS, { recursive: true });
    writeFileSync(`${ARTIFACTS}reconcile-5000.json`, `${JSON.stringify(figures, null, 2)}\n`);
    process.stdout.write(`Reconciling 5,000 members (ms): ${JSON.stringify(figures)}\n`);
  });

  it('learns every member at the first sighting and records nothing', () => {
    expect(firstSighting.run).toMatchObject({
      reconciliations: 1,
      reconciledMembers: 4_999,
      reconciledChanges: 0,
    });
    expect(firstSighting.events).toEqual([]);
    expect(firstSighting.known).toEqual([{ n: 4_999 * 3 }]);
  });

  it('records the 50 changed while it was stopped, and lets a live update overtake the rest', async () => {
    const before = await storedIds();
    const expected = changeFifty(0);
    // The service's publishes wait on the publish lock, held here, while the member chunks
    // arrive: the first chunk's batch (which found changes, so it needs that lock) is under
    // way, the other 4,000 members wait behind it.
    const release = discord.holdChunks(0);
    const requests = discord.memberRequests.length;
    const service = await start();
    await waitFor('the member request', () => discord.memberRequests.length > requests);
    const lock = new pg.Client({ connectionString: db.url });
    await lock.connect();
    try {
      await lock.query('SELECT pg_advisory_lock($1)', [PUBLISH_LOCK_KEY]);
      release();
      await waitFor(
        'every member waiting',
        async () => (await detectorBacklog(service)).reconcile === 4_999,
      );
      // The last chunk's member: its full-view observation goes along, ahead of the update.
      const last = members[4_998].user.id;
      discord.changeMember(BIG, last, { nick: 'Live!' });
      await waitFor(
        'the live update waiting',
        async () => (await detectorBacklog(service)).live === 2,
      );
      expect(await detectorBacklog(service)).toEqual({ live: 2, reconcile: 4_998 });
    } finally {
      await lock.end();
    }
    expect(await reconciled(service.url, 1)).toMatchObject({
      reconciliations: 1,
      reconciledMembers: 4_999,
      reconciledChanges: 50,
    });
    await waitFor('the live change', async () => (await storedSince(before)).length === 51);
    const events = await storedSince(before);
    const live = events.find((e) => e.name === 'N 4998')!;
    expect(live).toMatchObject({ userId: members[4_998].user.id, type: 'displayname' });
    const found = events.filter((e) => e !== live);
    expect(found.map(({ userId, type, name }) => ({ userId, type, name }))).toEqual(expected);
    // The first batch (the first chunk: members 0-998, 10 of the 50) was under way; the live
    // update went before the 4,000 members behind it, 40 of the 50.
    expect(found.filter((e) => BigInt(e.id) < BigInt(live.id))).toHaveLength(10);
    expect(discord.breaches).toEqual([]);
  }, 90_000);

  it('records exactly the next 50, and measures a reconciliation with nothing in its way', async () => {
    const before = await storedIds();
    const requests = discord.memberRequests.length;
    const expected = changeFifty(50);
    const service = await start();
    const run = await reconciled(service.url, 1);
    expect(run).toMatchObject({
      reconciliations: 1,
      reconciledMembers: 4_999,
      reconciledChanges: 50,
    });
    figures.fiftyChanges = Math.round(run.reconcileMs);
    const events = await storedSince(before);
    expect(events.map(({ userId, type, name }) => ({ userId, type, name }))).toEqual(expected);
    // One member list for the start (a request that met RATE_LIMITED would be asked again).
    expect(
      discord.memberRequests.slice(requests).filter((r) => r.answer === 'members'),
    ).toHaveLength(1);
    expect(discord.breaches).toEqual([]);
  }, 60_000);
});
