/**
 * A server of 5,000 members, reconciled through its member chunks by the built service
 * (`node dist/main.js`): the first sighting, changes made while it was stopped, a live
 * update overtaking the reconciliation. Writes the times it measured to
 * test/artifacts/reconcile-5000.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { PUBLISH_LOCK_KEY } from '../src/name-events/name-event-locks.js';
import { userPartitionOf } from '../src/name-events/name-event.types.js';
import { uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { byUser, recordedEvents, type RecordedEvent } from './support/detector.js';
import { detectorProcessEnv } from './support/detector-app.js';
import { detectorFigures, reconciled, type DetectorFigures } from './support/detector-metrics.js';
import { FakeDiscord, manyMembers } from './support/fake-discord.js';
import { waitFor } from './support/ports.js';
import { ServiceProcess } from './support/service-process.js';

const BIG = '800000000000000003';
const ARTIFACTS = fileURLToPath(new URL('artifacts/', import.meta.url));

/** Batches compared at once: members go to a lane by their partition. */
const LANES = 2;
const laneOf = (userId: string) => userPartitionOf(userId) % LANES;

/** The events' changes by user (in increasing id), as the members are listed. */
function changesByUser(events: readonly RecordedEvent[]) {
  return byUser(events.map(({ userId, type, name }) => ({ userId, type, name })));
}

async function detectorBacklog(service: ServiceProcess) {
  return (await detectorFigures(service.url)).backlog;
}

describe('a server of 5,000 members, in member chunks', () => {
  let db: TestDatabase;
  let discord: FakeDiscord;
  const services: ServiceProcess[] = [];
  const prefix = uniqueRedisPrefix();
  /** 4,999 members and the bot. */
  const members = manyMembers(4_999, 710000000000000000n, 'member');
  const figures: Record<string, number> = {};

  const start = async () => {
    const service = await ServiceProcess.start(
      detectorProcessEnv(db, discord, prefix, { DETECTOR_COMPARE_CONCURRENCY: String(LANES) }),
    );
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
      known: await db.query(
        `SELECT (SELECT count(*) FROM known_users)::int AS users,
                (SELECT count(*) FROM known_nicknames)::int AS nicknames`,
      ),
    };
    figures.firstSighting = Math.round(run.reconcileMs);
    await Promise.all(services.splice(0).map((s) => s.stop('SIGTERM')));
    // Stopped longer than Discord keeps a session: each start identifies and reconciles.
    discord.expireSessions();
  }, 60_000);

  afterEach(async () => {
    await Promise.all(services.splice(0).map((s) => s.stop('SIGTERM')));
    discord.expireSessions();
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
    expect(firstSighting.known).toEqual([{ users: 4_999, nicknames: 4_999 }]);
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
    expect(changesByUser(found)).toEqual(expected);
    // Each lane's first batch (its members of the first chunk, 0-998: 10 of the 50 between
    // the lanes) was under way. In the live update's lane, the update went before the members
    // behind that batch; the other lane went on with its own meanwhile.
    const firstChunk = new Set(members.slice(0, 999).map((m) => m.user.id));
    const lane = found.filter((e) => laneOf(e.userId) === laneOf(live.userId));
    const beforeLive = lane.filter((e) => BigInt(e.id) < BigInt(live.id)).map((e) => e.userId);
    expect(beforeLive).toEqual(lane.filter((e) => firstChunk.has(e.userId)).map((e) => e.userId));
    expect([beforeLive.length > 0, lane.length > beforeLive.length]).toEqual([true, true]);
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
    expect(changesByUser(await storedSince(before))).toEqual(expected);
    // One member list for the start (a request that met RATE_LIMITED would be asked again).
    expect(
      discord.memberRequests.slice(requests).filter((r) => r.answer === 'members'),
    ).toHaveLength(1);
    expect(discord.breaches).toEqual([]);
  }, 60_000);
});
