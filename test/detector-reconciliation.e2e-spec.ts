/**
 * What the detector finds after a time it was not watching, through the built service
 * (`node dist/main.js`) as deployments run it: restarted, or killed and taken over from by
 * another instance (which resumes the dead one's session when Discord still allows it). A server of 5,000 members: detector-large-server. Discord is the fake in
 * test/support, reached over the network through DISCORD_API_URL.
 */
import { uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { byUser, recordedChanges, recordedEvents } from './support/detector.js';
import { ALICE, BOB, detectorProcessEnv, GUILD_A, GUILD_B } from './support/detector-app.js';
import { detectorFigures, reconciled } from './support/detector-metrics.js';
import { shardFigures } from './support/detector-shards.js';
import { apiMember, FakeDiscord } from './support/fake-discord.js';
import { waitFor } from './support/ports.js';
import { ServiceProcess } from './support/service-process.js';

describe('changes made while the service was stopped', () => {
  let db: TestDatabase;
  let discord: FakeDiscord;
  const services: ServiceProcess[] = [];
  const prefix = uniqueRedisPrefix();

  const start = async () => {
    const service = await ServiceProcess.start(detectorProcessEnv(db, discord, prefix));
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
    // Stopped longer than Discord keeps a session: the next start cannot resume it.
    discord.expireSessions();

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
    discord.expireSessions();

    const third = await start();
    expect(await reconciled(third.url, 2)).toMatchObject({
      reconciliations: 2,
      reconciledChanges: 0,
    });
    expect(await recordedEvents(db)).toEqual(events);
  }, 120_000);
});

describe("two instances, the shard's holder killed", () => {
  let db: TestDatabase;
  let discord: FakeDiscord;
  const services: ServiceProcess[] = [];

  beforeEach(async () => {
    db = await TestDatabase.create();
    discord = await FakeDiscord.start({
      guilds: [{ id: GUILD_A, members: [apiMember(ALICE, { nick: 'Ali' }), apiMember(BOB)] }],
    });
  });

  afterEach(async () => {
    await Promise.all(services.splice(0).map((s) => s.stop('SIGKILL')));
    await discord.close();
    await db.drop();
  });

  /** Two instances; the shard's holder records a change live, then is killed. */
  async function killTheHolder() {
    const env = detectorProcessEnv(db, discord, uniqueRedisPrefix(), {
      DETECTOR_LEASE_MS: '2000',
    });
    services.push(...(await Promise.all([ServiceProcess.start(env), ServiceProcess.start(env)])));
    const holder = await waitFor('the holder to reconcile', async () => {
      const runs = await Promise.all(services.map((s) => detectorFigures(s.url)));
      return services.find((_, i) => runs[i].reconciliations === 1);
    });
    const other = services.find((s) => s !== holder)!;
    discord.changeMember(GUILD_A, ALICE.id, { nick: 'Ally' });
    await waitFor('the live change recorded', async () => (await recordedEvents(db)).length === 1);
    expect(await holder.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    // Nobody is connected: these wait in the dead instance's session.
    discord.changeUser(BOB.id, { username: 'bob2' });
    discord.changeMember(GUILD_A, ALICE.id, { nick: 'Alley' });
    return other;
  }

  it('the other resumes its session once the lease expires: what changed is replayed, recorded once', async () => {
    const other = await killTheHolder();
    const session = discord.session(0)!;
    await waitFor(
      'the session resumed by the other',
      () => session.resumes === 1 && discord.isLive(0),
    );
    await waitFor(
      'the replayed changes recorded',
      async () => (await recordedEvents(db)).length === 3,
    );
    expect(discord.identifies).toHaveLength(1);
    expect(await shardFigures(other)).toMatchObject({ held: 1, identifies: 0, resumes: 1 });
    // The change recorded live before the kill is not recorded again.
    expect(byUser(await recordedChanges(db))).toEqual([
      { userId: ALICE.id, type: 'displayname', name: 'Ali' },
      { userId: ALICE.id, type: 'displayname', name: 'Ally' },
      { userId: BOB.id, type: 'username', name: 'bob' },
    ]);
  }, 90_000);

  it('the other reconciles when Discord no longer resumes the session, and nothing is recorded twice', async () => {
    const other = await killTheHolder();
    discord.expireSessions();
    const run = await reconciled(other.url, 1);
    expect(discord.identifies).toHaveLength(2);
    expect(run).toMatchObject({ reconciliations: 1, reconciledMembers: 2, reconciledChanges: 2 });
    // The change recorded live is not recorded again.
    expect(byUser(await recordedChanges(db))).toEqual([
      { userId: ALICE.id, type: 'displayname', name: 'Ali' },
      { userId: ALICE.id, type: 'displayname', name: 'Ally' },
      { userId: BOB.id, type: 'username', name: 'bob' },
    ]);
  }, 90_000);
});
