/**
 * The detector through outages: of the gateway (a drop, RECONNECT, a session lost) and of
 * Postgres. In-process applications; Discord is the fake in test/support.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { redisEnv, startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import {
  changesOnceStored,
  knownNames,
  LogCapture,
  reconciliations,
  recordedChanges,
  recordedEvents,
} from './support/detector.js';
import {
  apiMember,
  apiUser,
  FakeDiscord,
  TEST_DISCORD_TOKEN,
  type FakeGuild,
} from './support/fake-discord.js';
import { waitFor } from './support/ports.js';
import { TcpProxy } from './support/tcp-proxy.js';

const GUILD_A = '800000000000000001';
const GUILD_B = '800000000000000002';
const ALICE = apiUser('700000000000000001', 'alice', { global_name: 'Alice A.' });
const BOB = apiUser('700000000000000002', 'bob');
const CAROL = apiUser('700000000000000003', 'carol', { discriminator: '1234' });
const DAVE = apiUser('700000000000000004', 'dave', { global_name: 'Dave' });

function world(): FakeGuild[] {
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
    { id: GUILD_B, members: [apiMember(ALICE), apiMember(DAVE, { nick: 'D' })] },
  ];
}

describe('the detector across gateway reconnections', () => {
  let db: TestDatabase;
  let discord: FakeDiscord;
  let app: TestApp;
  let logs: LogCapture;

  beforeAll(async () => {
    logs = new LogCapture();
    db = await TestDatabase.create();
    discord = await FakeDiscord.start({ guilds: world(), heartbeatIntervalMs: 400 });
    app = await startApp({
      ...redisEnv(db.url),
      DISCORD_TOKEN: TEST_DISCORD_TOKEN,
      DISCORD_API_URL: discord.apiUrl,
    });
    await waitFor('both servers reconciled', () => reconciliations(logs.messages).length === 2);
  });

  afterAll(async () => {
    await app.close();
    await discord.close();
    await db.drop();
    logs.restore();
  });

  it('records the changes Discord replays when the session is resumed after an outage', async () => {
    const session = discord.session(0)!;
    discord.startOutage();
    discord.changeUser(BOB.id, { username: 'bob2' });
    discord.changeMember(GUILD_A, CAROL.id, { nick: 'Cazz' });
    await waitFor('the client knocking again', () => discord.connections.some((c) => !c.hello));
    discord.endOutage();
    await waitFor('the session resumed', () => session.resumes === 1 && discord.isLive(0));
    const changes = await changesOnceStored(db, 2);
    expect(changes).toEqual([
      { userId: BOB.id, type: 'username', name: 'bob' },
      { userId: CAROL.id, type: 'displayname', name: 'Caz' },
    ]);
    expect(discord.identifies).toHaveLength(1);
  });

  it('resumes after RECONNECT and after a close with code 4000, missing nothing', async () => {
    const before = (await recordedEvents(db)).length;
    const session = discord.session(0)!;
    discord.requestReconnect(0);
    discord.changeMember(GUILD_A, BOB.id, { nick: 'Bobo' });
    discord.changeMember(GUILD_A, BOB.id, { nick: 'Bob O.' });
    await waitFor('resumed after RECONNECT', () => session.resumes === 2 && discord.isLive(0));
    discord.disconnect(0, 4000);
    discord.changeMember(GUILD_A, BOB.id, { nick: null });
    await waitFor('resumed after 4000', () => session.resumes === 3 && discord.isLive(0));
    const changes = await changesOnceStored(db, before + 2);
    expect(changes.slice(before)).toEqual([
      { userId: BOB.id, type: 'displayname', name: 'Bobo' },
      { userId: BOB.id, type: 'displayname', name: 'Bob O.' },
    ]);
    expect(discord.identifies).toHaveLength(1);
  });

  it('replaces a connection whose heartbeats go unacknowledged, and resumes it', async () => {
    const before = (await recordedEvents(db)).length;
    const session = discord.session(0)!;
    const resumes = session.resumes;
    const zombie = session.connection!;
    discord.ackHeartbeats = false;
    await waitFor('the zombie connection closed', () => zombie.closeCode !== undefined);
    discord.ackHeartbeats = true;
    discord.changeMember(GUILD_A, CAROL.id, { nick: 'Caroline' });
    await waitFor('resumed', () => session.resumes === resumes + 1 && discord.isLive(0));
    expect(await changesOnceStored(db, before + 1)).toEqual([
      ...(await recordedChanges(db)).slice(0, before),
      { userId: CAROL.id, type: 'displayname', name: 'Cazz' },
    ]);
    expect(discord.identifies).toHaveLength(1);
  });

  it('finds by reconciliation what changed while a session was lost (INVALID_SESSION)', async () => {
    const before = (await recordedEvents(db)).length;
    const runs = reconciliations(logs.messages).length;
    discord.startOutage({ sessionsLost: true });
    discord.changeUser(DAVE.id, { username: 'david', global_name: 'David' });
    discord.changeMember(GUILD_B, DAVE.id, { nick: 'Dino' });
    discord.changeUser(ALICE.id, { avatar: 'f00' });
    await waitFor('the client knocking again', () => discord.connections.some((c) => !c.hello));
    discord.endOutage();
    // The RESUME is refused; discord.js identifies anew (after its 5 s identify throttle).
    await waitFor('a new session', () => discord.identifies.length === 2, { timeoutMs: 20_000 });
    await waitFor(
      'both servers reconciled again',
      () => reconciliations(logs.messages).length === runs + 2,
    );
    expect(reconciliations(logs.messages).slice(runs)).toEqual(
      expect.arrayContaining([
        { guildId: GUILD_A, members: 4, ms: expect.any(Number), changes: 2 },
        { guildId: GUILD_B, members: 2, ms: expect.any(Number), changes: 1 },
      ]),
    );
    const changes = (await recordedChanges(db)).slice(before);
    expect(changes).toHaveLength(3);
    expect(changes).toEqual(
      expect.arrayContaining([
        { userId: DAVE.id, type: 'username', name: 'dave' },
        { userId: DAVE.id, type: 'displayname', name: 'Dave' },
        { userId: DAVE.id, type: 'displayname', name: 'D' },
      ]),
    );
  }, 40_000);
});

describe('the detector while Postgres is down (a TCP proxy in front of it, cut and restored)', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let discord: FakeDiscord;
  let app: TestApp;
  let logs: LogCapture;

  beforeAll(async () => {
    logs = new LogCapture();
    db = await TestDatabase.create();
    const direct = new URL(db.url);
    proxy = await TcpProxy.start({ host: direct.hostname, port: Number(direct.port || 5432) });
    const viaProxy = new URL(db.url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    discord = await FakeDiscord.start({ guilds: world() });
    app = await startApp({
      ...redisEnv(viaProxy.toString()),
      DISCORD_TOKEN: TEST_DISCORD_TOKEN,
      DISCORD_API_URL: discord.apiUrl,
    });
    await waitFor('both servers reconciled', () => reconciliations(logs.messages).length === 2);
  });

  afterAll(async () => {
    await app.close();
    await discord.close();
    await proxy.close();
    await db.drop();
    logs.restore();
  });

  it('retries what it saw meanwhile, and records each change once, in order, when it is back', async () => {
    proxy.cut();
    discord.changeMember(GUILD_A, ALICE.id, { nick: 'A1' });
    discord.changeMember(GUILD_A, ALICE.id, { nick: 'A2' });
    discord.changeUser(BOB.id, { username: 'bobby' });
    await waitFor('a failed attempt', () =>
      logs.messages.some((m) => m.startsWith('Could not compare and publish')),
    );
    proxy.restore();
    expect(await changesOnceStored(db, 3)).toEqual([
      { userId: ALICE.id, type: 'displayname', name: 'Ali' },
      { userId: ALICE.id, type: 'displayname', name: 'A1' },
      { userId: BOB.id, type: 'username', name: 'bob' },
    ]);
    // A sentinel: once it is stored, nothing before it is still on its way.
    discord.changeMember(GUILD_B, DAVE.id, { nick: 'Dee' });
    await changesOnceStored(db, 4);
    expect(await recordedChanges(db)).toHaveLength(4);
    expect(await knownNames(db)).toEqual(
      expect.arrayContaining([
        { userId: ALICE.id, field: 'nickname', guildId: GUILD_A, name: 'A2' },
        { userId: BOB.id, field: 'username', guildId: '', name: 'bobby' },
      ]),
    );
  }, 30_000);
});
