import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { GatewayIntentBits, type APIUser } from 'discord.js';
import { Clock } from '../src/detector/clock.js';
import { useApp } from './support/app.js';
import {
  changesOf,
  changesOfOnceStored,
  detectorFigures,
  joined,
  knownNames,
  newUser,
  reconciled,
} from './support/detector.js';
import {
  apiMember,
  apiUser,
  BOT_USER,
  FakeDiscord,
  TEST_DISCORD_TOKEN,
  type FakeGuild,
} from './support/fake-discord.js';
import { waitFor } from './support/ports.js';

const GUILD_A = '800000000000000001';
const GUILD_B = '800000000000000002';
const ALICE = apiUser('700000000000000001', 'alice', { global_name: 'Alice A.' });
const BOB = apiUser('700000000000000002', 'bob');
const CAROL = apiUser('700000000000000003', 'carol', { discriminator: '1234' });
const DAVE = apiUser('700000000000000004', 'dave', { global_name: 'Dave' });

/** Two servers; the second on shard `shardOfB` (the first is on shard 0). */
function world(shardOfB = 0): FakeGuild[] {
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

/** A clock the tests set, so the stream's bytes can be asserted exactly. */
class TestClock extends Clock {
  time = new Date('2025-03-04T05:06:07.089Z');
  override now(): Date {
    return new Date(this.time);
  }
}

describe('the detector over the gateway protocol (Postgres, Redis)', () => {
  let discord: FakeDiscord;
  const clock = new TestClock();
  const INITIAL = [ALICE, BOB, CAROL, DAVE];

  beforeAll(async () => {
    discord = await FakeDiscord.start({
      guilds: world(1),
      shardCount: 2,
      heartbeatIntervalMs: 300,
    });
  });

  const fx = useApp({
    env: () => ({ DISCORD_TOKEN: TEST_DISCORD_TOKEN, DISCORD_API_URL: discord.apiUrl }),
    customize: (builder) => builder.overrideProvider(Clock).useValue(clock),
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

  it('logs in through DISCORD_API_URL, identifies each shard with its intents, and heartbeats', async () => {
    expect(discord.rest).toEqual([
      {
        method: 'GET',
        path: '/api/v10/gateway/bot',
        authorization: `Bot ${TEST_DISCORD_TOKEN}`,
        at: expect.any(Number),
      },
    ]);
    const identifies = discord.identifies.map((connection) => connection.received[0]);
    expect(identifies.map((payload) => (payload.d as { shard: number[] }).shard).sort()).toEqual([
      [0, 2],
      [1, 2],
    ]);
    for (const { d } of identifies) {
      expect(d).toMatchObject({
        token: TEST_DISCORD_TOKEN,
        intents: GatewayIntentBits.Guilds | GatewayIntentBits.GuildMembers,
      });
    }
    const acks = discord.identifies.map((connection) => connection.heartbeatAcks);
    await waitFor('two more heartbeats acknowledged on both shards', () =>
      discord.identifies.every((connection, i) => connection.heartbeatAcks >= acks[i] + 2),
    );
    expect(discord.breaches).toEqual([]);
  });

  it('records nothing at the first sighting, and knows every name it saw but the bot', async () => {
    // Both servers seen in full (4 and 2 members besides the bot), nothing recorded.
    expect(await detectorFigures(fx.url)).toMatchObject({
      reconciliations: 2,
      reconciledMembers: 4 + 2,
      reconciledChanges: 0,
    });
    expect(await changesOf(fx.db, INITIAL)).toEqual([]);
    const initialIds = new Set(INITIAL.map((user) => user.id));
    const known = (await knownNames(fx.db)).filter((k) => initialIds.has(k.userId));
    const nicknamesIn = (guildId: string) =>
      known.filter((k) => k.field === 'nickname' && k.guildId === guildId).length;
    expect([nicknamesIn(GUILD_A), nicknamesIn(GUILD_B)]).toEqual([4, 2]);
    expect(known.filter((k) => k.userId === ALICE.id)).toEqual([
      { userId: ALICE.id, field: 'global_name', guildId: '', name: 'Alice A.' },
      { userId: ALICE.id, field: 'nickname', guildId: GUILD_A, name: 'Ali' },
      { userId: ALICE.id, field: 'nickname', guildId: GUILD_B, name: null },
      { userId: ALICE.id, field: 'username', guildId: '', name: 'alice' },
    ]);
    expect((await knownNames(fx.db)).some((k) => k.userId === BOT_USER.id)).toBe(false);
    expect(known).toHaveLength(4 * 3 + 1 + 1);
  });

  it('sends a username change, seen through two servers, to a listener once, and records it', async () => {
    // Set before the first sighting: an observation older than the known name is stale.
    clock.time = new Date('2025-03-04T05:06:07.089Z');
    const user = newUser('alice', { global_name: 'Alice A.' });
    const marker = newUser('dave', { global_name: 'Dave' });
    await join(user, { [GUILD_A]: 'Ali', [GUILD_B]: null });
    await join(marker, { [GUILD_B]: 'D' });
    const stream = await fx.listen();
    expect(stream.status).toBe(200);
    await stream.until((s) => s.raw.length > 0);

    discord.changeUser(user.id, { username: 'alice_new' });
    await stream.untilEvents(1);
    const [{ id }] = stream.events;
    expect(stream.raw).toContain(
      `id: ${id}\ndata: {"userId":"${user.id}","type":"username","name":"alice","changedAt":"2025-03-04T05:06:07.089Z"}\n\n`,
    );
    // A sentinel behind the second server's update, on its shard: live updates are compared
    // in the order they arrive, so had that update been recorded it would come first.
    discord.changeMember(GUILD_B, marker.id, { nick: 'Dee' });
    await stream.untilEvents(2);
    expect(stream.events.map((e) => e.data)).toEqual([
      { userId: user.id, type: 'username', name: 'alice', changedAt: '2025-03-04T05:06:07.089Z' },
      { userId: marker.id, type: 'displayname', name: 'D', changedAt: '2025-03-04T05:06:07.089Z' },
    ]);
    expect((await fx.history(user.id)).body).toEqual({
      userId: user.id,
      prevnames: [{ type: 'username', name: 'alice', changedAt: '2025-03-04T05:06:07.089Z' }],
      code: 200,
    });
  });

  it('records a global display name, a nickname reset and a move off the legacy name#1234, once each', async () => {
    clock.time = new Date('2025-03-04T06:00:00.000Z');
    const alice = newUser('alice', { global_name: 'Alice A.' });
    const carol = newUser('carol', { discriminator: '1234' });
    await join(alice, { [GUILD_A]: 'Ali' });
    await join(carol, { [GUILD_A]: 'Caz' });
    discord.changeUser(alice.id, { global_name: null });
    discord.changeMember(GUILD_A, alice.id, { nick: null });
    discord.changeUser(carol.id, { discriminator: '0' });
    expect(await changesOfOnceStored(fx.db, [alice, carol], 3)).toEqual([
      { userId: alice.id, type: 'displayname', name: 'Alice A.' },
      { userId: alice.id, type: 'displayname', name: 'Ali' },
      { userId: carol.id, type: 'username', name: 'carol#1234' },
    ]);
  });

  it("records nothing for an avatar, the bot's own member, a first sighting or a first name", async () => {
    clock.time = new Date('2025-03-04T07:00:00.000Z');
    const dave = newUser('dave', { global_name: 'Dave' });
    const bob = newUser('bob');
    const alice = newUser('alice', { global_name: 'Alice A.' });
    const newcomer = newUser('newcomer', { global_name: 'New' });
    const carol = newUser('carol');
    const dino = newUser('dino');
    await join(dave, { [GUILD_A]: null });
    await join(bob, { [GUILD_A]: null });
    await join(alice, { [GUILD_B]: null });
    await join(carol, { [GUILD_A]: 'Caz' });
    await join(dino, { [GUILD_B]: 'D' });
    const users = [dave, bob, alice, newcomer, carol, dino, BOT_USER];

    discord.changeUser(dave.id, { avatar: 'a1b2c3' });
    discord.changeBot(GUILD_A, { nick: 'Renamed bot' });
    discord.changeBot(GUILD_A, { nick: null });
    discord.addMember(GUILD_A, apiMember(newcomer, { nick: 'Newbie' }));
    discord.changeUser(bob.id, { global_name: 'Bobby' });
    discord.changeMember(GUILD_B, alice.id, { nick: 'Al' });
    // One sentinel per shard: live updates are compared in the order they arrive, so once
    // both are stored everything before them was compared.
    discord.changeMember(GUILD_A, carol.id, { nick: 'Cazz' });
    discord.changeMember(GUILD_B, dino.id, { nick: 'Dino' });
    const changes = await changesOfOnceStored(fx.db, users, 2);
    expect(changes).toEqual(
      expect.arrayContaining([
        { userId: carol.id, type: 'displayname', name: 'Caz' },
        { userId: dino.id, type: 'displayname', name: 'D' },
      ]),
    );
    expect(changes).toHaveLength(2);
    const known = await knownNames(fx.db);
    expect(known).toEqual(
      expect.arrayContaining([
        { userId: newcomer.id, field: 'nickname', guildId: GUILD_A, name: 'Newbie' },
        { userId: bob.id, field: 'global_name', guildId: '', name: 'Bobby' },
        { userId: alice.id, field: 'nickname', guildId: GUILD_B, name: 'Al' },
      ]),
    );
    expect(known.some((k) => k.userId === BOT_USER.id)).toBe(false);
  });
});

describe('the detector on the embedded defaults (PGlite, no Redis) behind a gateway address of its own', () => {
  let discord: FakeDiscord;

  beforeAll(async () => {
    // GET /gateway/bot names an address nothing listens on: DISCORD_GATEWAY_URL wins over it.
    discord = await FakeDiscord.start({
      guilds: world(),
      advertisedGatewayUrl: 'ws://127.0.0.1:9',
    });
  });

  const fx = useApp({
    backend: 'embedded',
    env: () => ({
      DISCORD_TOKEN: TEST_DISCORD_TOKEN,
      DISCORD_API_URL: `${discord.apiUrl}/`,
      DISCORD_GATEWAY_URL: discord.gatewayUrl,
    }),
  });

  afterAll(async () => {
    await discord.close();
  });

  it('connects, reconciles and records what it detects', async () => {
    await reconciled(fx.url, 2);
    expect(discord.identifies).toHaveLength(1);
    discord.changeUser(ALICE.id, { global_name: 'Alice B.' });
    await waitFor(
      'the change in the history',
      async () => (await fx.history(ALICE.id)).body.prevnames.length > 0,
    );
    expect((await fx.history(ALICE.id)).body).toEqual({
      userId: ALICE.id,
      prevnames: [{ type: 'displayname', name: 'Alice A.', changedAt: expect.any(String) }],
      code: 200,
    });
  });
});
