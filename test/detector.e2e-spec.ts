/**
 * The detector over the gateway protocol: how it logs in and stays connected, what it learns
 * at the first sighting, and a change on its way to a listener and the history. What it
 * records for each kind of change: detector-name-rules. Discord is the fake in test/support.
 */
import { describe, expect, it } from '@jest/globals';
import { GatewayIntentBits, GatewayOpcodes } from 'discord.js';
import { Clock } from '../src/detector/clock.js';
import { changesOf, joinedEach, knownNames, newUser } from './support/detector.js';
import {
  ALICE,
  BOB,
  CAROL,
  DAVE,
  GUILD_A,
  GUILD_B,
  twoServers,
  useDetectorApp,
} from './support/detector-app.js';
import { detectorFigures } from './support/detector-metrics.js';
import { BOT_USER, TEST_DISCORD_TOKEN } from './support/fake-discord.js';
import { waitFor } from './support/ports.js';

/** A clock the tests set, so the stream's bytes can be asserted exactly. */
class TestClock extends Clock {
  time = new Date('2025-03-04T05:06:07.089Z');
  override now(): Date {
    return new Date(this.time);
  }
}

describe('the detector over the gateway protocol (Postgres, Redis)', () => {
  const clock = new TestClock();
  const INITIAL = [ALICE, BOB, CAROL, DAVE];
  const { fx, discord } = useDetectorApp(
    { guilds: twoServers(1), shardCount: 2, heartbeatIntervalMs: 300 },
    { customize: (builder) => builder.overrideProvider(Clock).useValue(clock) },
  );

  it('logs in through DISCORD_API_URL, identifies each shard with its intents, and heartbeats', async () => {
    expect(discord.rest).toEqual([
      {
        method: 'GET',
        path: '/api/v10/gateway/bot',
        authorization: `Bot ${TEST_DISCORD_TOKEN}`,
        at: expect.any(Number),
      },
    ]);
    // The IDENTIFY, not always the first message: a heartbeat may go first (its jitter).
    const identifies = discord.identifies.map((connection) =>
      connection.received.find((payload) => payload.op === (GatewayOpcodes.Identify as number))!,
    );
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
    await joinedEach(discord, fx.db, user, { [GUILD_A]: 'Ali', [GUILD_B]: null });
    await joinedEach(discord, fx.db, marker, { [GUILD_B]: 'D' });
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
});
