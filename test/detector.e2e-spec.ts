import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { GatewayIntentBits } from 'discord.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Clock } from '../src/detector/clock.js';
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
  BOT_USER,
  FakeDiscord,
  TEST_DISCORD_TOKEN,
  type FakeGuild,
} from './support/fake-discord.js';
import { http } from './support/http.js';
import { waitFor } from './support/ports.js';
import { SseStream } from './support/sse.js';

const LISTEN = '/api/webhooks/prevnames/listen';
const GUILD_A = '800000000000000001';
const GUILD_B = '800000000000000002';
const ALICE = apiUser('700000000000000001', 'alice', { global_name: 'Alice A.' });
const BOB = apiUser('700000000000000002', 'bob');
const CAROL = apiUser('700000000000000003', 'carol', { discriminator: '1234' });
const DAVE = apiUser('700000000000000004', 'dave', { global_name: 'Dave' });
const NEWCOMER = apiUser('700000000000000005', 'newcomer', { global_name: 'New' });

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

async function startDetectorApp(env: Record<string, string | undefined>, clock?: Clock) {
  return startApp(env, 0, (builder) =>
    clock ? builder.overrideProvider(Clock).useValue(clock) : builder,
  );
}

async function historyOf(app: TestApp, userId: string) {
  return (await http(`${app.url}/api/users/${userId}/prevnames`)).body;
}

describe('the detector over the gateway protocol (Postgres, Redis)', () => {
  let db: TestDatabase;
  let discord: FakeDiscord;
  let app: TestApp;
  let logs: LogCapture;
  const clock = new TestClock();
  const streams: SseStream[] = [];

  beforeAll(async () => {
    logs = new LogCapture();
    db = await TestDatabase.create();
    discord = await FakeDiscord.start({
      guilds: world(1),
      shardCount: 2,
      heartbeatIntervalMs: 300,
    });
    app = await startDetectorApp(
      { ...redisEnv(db.url), DISCORD_TOKEN: TEST_DISCORD_TOKEN, DISCORD_API_URL: discord.apiUrl },
      clock,
    );
    await waitFor('both servers reconciled', () => reconciliations(logs.messages).length === 2);
  });

  afterEach(() => {
    for (const stream of streams.splice(0)) stream.close();
  });

  afterAll(async () => {
    await app.close();
    await discord.close();
    await db.drop();
    logs.restore();
  });

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
    await waitFor('heartbeats acknowledged on both shards', () =>
      discord.identifies.every((connection) => connection.heartbeatAcks >= 2),
    );
    expect(discord.breaches).toEqual([]);
  });

  it('records nothing at the first sighting, and knows every name it saw but the bot', async () => {
    expect(reconciliations(logs.messages)).toEqual(
      expect.arrayContaining([
        { guildId: GUILD_A, members: 4, ms: expect.any(Number), changes: 0 },
        { guildId: GUILD_B, members: 2, ms: expect.any(Number), changes: 0 },
      ]),
    );
    expect(await recordedEvents(db)).toEqual([]);
    const known = await knownNames(db);
    expect(known.filter((k) => k.userId === ALICE.id)).toEqual([
      { userId: ALICE.id, field: 'global_name', guildId: '', name: 'Alice A.' },
      { userId: ALICE.id, field: 'nickname', guildId: GUILD_A, name: 'Ali' },
      { userId: ALICE.id, field: 'nickname', guildId: GUILD_B, name: null },
      { userId: ALICE.id, field: 'username', guildId: '', name: 'alice' },
    ]);
    expect(known.some((k) => k.userId === BOT_USER.id)).toBe(false);
    expect(known).toHaveLength(4 * 3 + 1 + 1);
  });

  it('sends a username change, seen through two servers, to a listener once, and records it', async () => {
    const stream = await SseStream.open(`${app.url}${LISTEN}`);
    streams.push(stream);
    expect(stream.status).toBe(200);
    await stream.until((s) => s.raw.length > 0);
    clock.time = new Date('2025-03-04T05:06:07.089Z');

    discord.changeUser(ALICE.id, { username: 'alice_new' });
    await stream.untilEvents(1);
    const [{ id }] = stream.events;
    expect(stream.raw).toContain(
      `id: ${id}\ndata: {"userId":"${ALICE.id}","type":"username","name":"alice","changedAt":"2025-03-04T05:06:07.089Z"}\n\n`,
    );
    // A sentinel behind the second server's update, on its shard: live updates are compared
    // in the order they arrive, so had that update been recorded it would come first.
    discord.changeMember(GUILD_B, DAVE.id, { nick: 'Dee' });
    await stream.untilEvents(2);
    expect(stream.events.map((e) => e.data)).toEqual([
      { userId: ALICE.id, type: 'username', name: 'alice', changedAt: '2025-03-04T05:06:07.089Z' },
      { userId: DAVE.id, type: 'displayname', name: 'D', changedAt: '2025-03-04T05:06:07.089Z' },
    ]);
    expect(await historyOf(app, ALICE.id)).toEqual({
      userId: ALICE.id,
      prevnames: [{ type: 'username', name: 'alice', changedAt: '2025-03-04T05:06:07.089Z' }],
      code: 200,
    });
  });

  it('records a global display name, a nickname reset and a move off the legacy name#1234, once each', async () => {
    clock.time = new Date('2025-03-04T06:00:00.000Z');
    const before = (await recordedEvents(db)).length;
    discord.changeUser(ALICE.id, { global_name: null });
    discord.changeMember(GUILD_A, ALICE.id, { nick: null });
    discord.changeUser(CAROL.id, { discriminator: '0' });
    await waitFor('3 more events', async () => (await recordedEvents(db)).length === before + 3);
    expect((await recordedChanges(db)).slice(before)).toEqual([
      { userId: ALICE.id, type: 'displayname', name: 'Alice A.' },
      { userId: ALICE.id, type: 'displayname', name: 'Ali' },
      { userId: CAROL.id, type: 'username', name: 'carol#1234' },
    ]);
  });

  it("records nothing for an avatar, the bot's own member, a first sighting or a first name", async () => {
    clock.time = new Date('2025-03-04T07:00:00.000Z');
    const before = (await recordedEvents(db)).length;
    discord.changeUser(DAVE.id, { avatar: 'a1b2c3' });
    discord.changeBot(GUILD_A, { nick: 'Renamed bot' });
    discord.changeBot(GUILD_A, { nick: null });
    discord.addMember(GUILD_A, apiMember(NEWCOMER, { nick: 'Newbie' }));
    discord.changeUser(BOB.id, { global_name: 'Bobby' });
    discord.changeMember(GUILD_B, ALICE.id, { nick: 'Al' });
    // One sentinel per shard: live updates are compared in the order they arrive, so once
    // both are stored everything before them was compared.
    discord.changeMember(GUILD_A, CAROL.id, { nick: 'Cazz' });
    discord.changeMember(GUILD_B, DAVE.id, { nick: 'Dino' });
    const changes = await changesOnceStored(db, before + 2);
    expect(changes.slice(before)).toEqual(
      expect.arrayContaining([
        { userId: CAROL.id, type: 'displayname', name: 'Caz' },
        { userId: DAVE.id, type: 'displayname', name: 'Dee' },
      ]),
    );
    expect(changes).toHaveLength(before + 2);
    const known = await knownNames(db);
    expect(known).toEqual(
      expect.arrayContaining([
        { userId: NEWCOMER.id, field: 'nickname', guildId: GUILD_A, name: 'Newbie' },
        { userId: BOB.id, field: 'global_name', guildId: '', name: 'Bobby' },
        { userId: ALICE.id, field: 'nickname', guildId: GUILD_B, name: 'Al' },
      ]),
    );
    expect(known.some((k) => k.userId === BOT_USER.id)).toBe(false);
  });
});

describe('the detector on the embedded defaults (PGlite, no Redis) behind a gateway address of its own', () => {
  let dataDir: string;
  let discord: FakeDiscord;
  let app: TestApp;
  let logs: LogCapture;

  beforeAll(async () => {
    logs = new LogCapture();
    dataDir = await mkdtemp(join(tmpdir(), 'detector-e2e-'));
    // GET /gateway/bot names an address nothing listens on: DISCORD_GATEWAY_URL wins over it.
    discord = await FakeDiscord.start({
      guilds: world(),
      advertisedGatewayUrl: 'ws://127.0.0.1:9',
    });
    app = await startDetectorApp({
      DATA_DIR: dataDir,
      DISCORD_TOKEN: TEST_DISCORD_TOKEN,
      DISCORD_API_URL: `${discord.apiUrl}/`,
      DISCORD_GATEWAY_URL: discord.gatewayUrl,
    });
  });

  afterAll(async () => {
    await app.close();
    await discord.close();
    await rm(dataDir, { recursive: true, force: true });
    logs.restore();
  });

  it('connects, reconciles and records what it detects', async () => {
    await waitFor('both servers reconciled', () => reconciliations(logs.messages).length === 2);
    expect(discord.identifies).toHaveLength(1);
    discord.changeUser(ALICE.id, { global_name: 'Alice B.' });
    await waitFor(
      'the change in the history',
      async () => ((await historyOf(app, ALICE.id)) as { prevnames: unknown[] }).prevnames.length,
    );
    expect(await historyOf(app, ALICE.id)).toEqual({
      userId: ALICE.id,
      prevnames: [{ type: 'displayname', name: 'Alice A.', changedAt: expect.any(String) }],
      code: 200,
    });
  });
});
