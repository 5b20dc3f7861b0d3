/**
 * The detector through outages: of the gateway (a drop, RECONNECT, a session lost) and of
 * Postgres. In-process applications; Discord is the fake in test/support.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { APIUser } from 'discord.js';
import { useApp } from './support/app.js';
import {
  changesOf,
  changesOfOnceStored,
  changesOnceStored,
  detectorFigures,
  joined,
  knownNames,
  newUser,
  reconciled,
  recordedChanges,
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
  let discord: FakeDiscord;

  beforeAll(async () => {
    discord = await FakeDiscord.start({ guilds: world(), heartbeatIntervalMs: 400 });
  });

  const fx = useApp({
    env: () => ({ DISCORD_TOKEN: TEST_DISCORD_TOKEN, DISCORD_API_URL: discord.apiUrl }),
  });

  beforeAll(async () => {
    await reconciled(fx.url, 2);
  });

  afterAll(async () => {
    await discord.close();
  });

  /** `user` joins each server of `nicks` with that nickname, and is known there. */
  const join = async (user: APIUser, nicks: Record<string, string | null>) => {
    for (const [guildId, nick] of Object.entries(nicks)) {
      await joined(discord, fx.db, guildId, apiMember(user, { nick }));
    }
  };
  /** A connection that has had no HELLO yet: the client knocking while the gateway is out. */
  const knocking = () => discord.connections.some((c) => !c.hello);

  it('records the changes Discord replays when the session is resumed after an outage', async () => {
    const bob = newUser('bob');
    const carol = newUser('carol');
    await join(bob, { [GUILD_A]: null });
    await join(carol, { [GUILD_A]: 'Caz' });
    const session = discord.session(0)!;
    const { resumes } = session;
    const identifies = discord.identifies.length;
    discord.startOutage();
    discord.changeUser(bob.id, { username: 'bob2' });
    discord.changeMember(GUILD_A, carol.id, { nick: 'Cazz' });
    await waitFor('the client knocking again', knocking);
    discord.endOutage();
    await waitFor(
      'the session resumed',
      () => session.resumes === resumes + 1 && discord.isLive(0),
    );
    expect(await changesOfOnceStored(fx.db, [bob, carol], 2)).toEqual([
      { userId: bob.id, type: 'username', name: 'bob' },
      { userId: carol.id, type: 'displayname', name: 'Caz' },
    ]);
    expect(discord.identifies).toHaveLength(identifies);
  });

  it('resumes after RECONNECT and after a close with code 4000, missing nothing', async () => {
    const bob = newUser('bob');
    await join(bob, { [GUILD_A]: null });
    const session = discord.session(0)!;
    const { resumes } = session;
    const identifies = discord.identifies.length;
    discord.requestReconnect(0);
    discord.changeMember(GUILD_A, bob.id, { nick: 'Bobo' });
    discord.changeMember(GUILD_A, bob.id, { nick: 'Bob O.' });
    await waitFor(
      'resumed after RECONNECT',
      () => session.resumes === resumes + 1 && discord.isLive(0),
    );
    discord.disconnect(0, 4000);
    discord.changeMember(GUILD_A, bob.id, { nick: null });
    await waitFor('resumed after 4000', () => session.resumes === resumes + 2 && discord.isLive(0));
    expect(await changesOfOnceStored(fx.db, [bob], 2)).toEqual([
      { userId: bob.id, type: 'displayname', name: 'Bobo' },
      { userId: bob.id, type: 'displayname', name: 'Bob O.' },
    ]);
    expect(discord.identifies).toHaveLength(identifies);
  });

  it('replaces a connection whose heartbeats go unacknowledged, and resumes it', async () => {
    const carol = newUser('carol');
    await join(carol, { [GUILD_A]: 'Cazz' });
    const session = discord.session(0)!;
    const { resumes } = session;
    const identifies = discord.identifies.length;
    const zombie = session.connection!;
    discord.ackHeartbeats = false;
    try {
      await waitFor('the zombie connection closed', () => zombie.closeCode !== undefined);
    } finally {
      discord.ackHeartbeats = true;
    }
    discord.changeMember(GUILD_A, carol.id, { nick: 'Caroline' });
    await waitFor('resumed', () => session.resumes === resumes + 1 && discord.isLive(0));
    expect(await changesOfOnceStored(fx.db, [carol], 1)).toEqual([
      { userId: carol.id, type: 'displayname', name: 'Cazz' },
    ]);
    expect(discord.identifies).toHaveLength(identifies);
  });

  it('finds by reconciliation what changed while a session was lost (INVALID_SESSION)', async () => {
    const dave = newUser('dave', { global_name: 'Dave' });
    const alice = newUser('alice', { global_name: 'Alice A.' });
    await join(dave, { [GUILD_A]: null, [GUILD_B]: 'D' });
    await join(alice, { [GUILD_A]: 'Ali' });
    const before = await detectorFigures(fx.url);
    const identifies = discord.identifies.length;
    discord.startOutage({ sessionsLost: true });
    discord.changeUser(dave.id, { username: 'david', global_name: 'David' });
    discord.changeMember(GUILD_B, dave.id, { nick: 'Dino' });
    discord.changeUser(alice.id, { avatar: 'f00' });
    await waitFor('the client knocking again', knocking);
    discord.endOutage();
    // The RESUME is refused; discord.js identifies anew (after its 5 s identify throttle).
    await waitFor('a new session', () => discord.identifies.length === identifies + 1, {
      timeoutMs: 20_000,
    });
    // Both servers seen in full again, every member compared; three changes found.
    expect(await reconciled(fx.url, 2, { before })).toMatchObject({
      reconciliations: 2,
      reconciledMembers:
        discord.guild(GUILD_A).members.length + discord.guild(GUILD_B).members.length,
      reconciledChanges: 3,
    });
    const changes = await changesOf(fx.db, [dave, alice]);
    expect(changes).toHaveLength(3);
    expect(changes).toEqual(
      expect.arrayContaining([
        { userId: dave.id, type: 'username', name: 'dave' },
        { userId: dave.id, type: 'displayname', name: 'Dave' },
        { userId: dave.id, type: 'displayname', name: 'D' },
      ]),
    );
  }, 40_000);
});

describe('the detector while Postgres is down (a TCP proxy in front of it, cut and restored)', () => {
  let proxy: TcpProxy;
  let discord: FakeDiscord;

  beforeAll(async () => {
    discord = await FakeDiscord.start({ guilds: world() });
  });

  const fx = useApp({
    env: async (db) => {
      const direct = new URL(db!.url);
      proxy = await TcpProxy.start({ host: direct.hostname, port: Number(direct.port || 5432) });
      const viaProxy = new URL(db!.url);
      viaProxy.hostname = '127.0.0.1';
      viaProxy.port = String(proxy.port);
      return {
        DATABASE_URL: viaProxy.toString(),
        DISCORD_TOKEN: TEST_DISCORD_TOKEN,
        DISCORD_API_URL: discord.apiUrl,
      };
    },
  });

  beforeAll(async () => {
    await reconciled(fx.url, 2);
  });

  afterAll(async () => {
    await discord.close();
    await proxy?.close();
  });

  it('retries what it saw meanwhile, and records each change once, in order, when it is back', async () => {
    proxy.cut();
    discord.changeMember(GUILD_A, ALICE.id, { nick: 'A1' });
    discord.changeMember(GUILD_A, ALICE.id, { nick: 'A2' });
    discord.changeUser(BOB.id, { username: 'bobby' });
    await waitFor(
      'a failed attempt',
      async () => (await detectorFigures(fx.url)).publishFailures > 0,
    );
    proxy.restore();
    expect(await changesOnceStored(fx.db, 3)).toEqual([
      { userId: ALICE.id, type: 'displayname', name: 'Ali' },
      { userId: ALICE.id, type: 'displayname', name: 'A1' },
      { userId: BOB.id, type: 'username', name: 'bob' },
    ]);
    // A sentinel: once it is stored, nothing before it is still on its way.
    discord.changeMember(GUILD_B, DAVE.id, { nick: 'Dee' });
    await changesOnceStored(fx.db, 4);
    expect(await recordedChanges(fx.db)).toHaveLength(4);
    expect(await knownNames(fx.db)).toEqual(
      expect.arrayContaining([
        { userId: ALICE.id, field: 'nickname', guildId: GUILD_A, name: 'A2' },
        { userId: BOB.id, field: 'username', guildId: '', name: 'bobby' },
      ]),
    );
  }, 30_000);
});
