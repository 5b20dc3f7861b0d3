import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Events, type Client } from 'discord.js';
import {
  apiMember,
  apiUser,
  BOT_USER,
  FakeDiscordGateway,
  TEST_DISCORD_TOKEN,
  uncachedMember,
  uncachedUser,
} from '../../test/support/discord-gateway.js';
import type { NameChange } from '../publish/publish.service.js';
import type { Clock } from './clock.js';
import type { DetectorOutbox } from './detector-outbox.js';
import { detectorSettings } from './detector.settings.js';
import { DiscordClientFactory } from './discord-client.factory.js';
import { NameChangeDetector } from './name-change-detector.js';

const GUILD_A = '800000000000000001';
const GUILD_B = '800000000000000002';
const ALICE = apiUser('700000000000000001', 'alice', { global_name: 'Alice A.' });
const BOB = apiUser('700000000000000002', 'bob');
const LEGACY = apiUser('700000000000000003', 'carol', { discriminator: '1234' });
const STRANGER = apiUser('700000000000000009', 'stranger');

/** A clock the test moves by hand. */
class FixedClock implements Clock {
  constructor(public time: Date) {}
  now(): Date {
    return new Date(this.time);
  }
}

const at = (iso: string) => new Date(iso);

describe('NameChangeDetector on a real discord.js client', () => {
  let client: Client;
  let gateway: FakeDiscordGateway;
  let clock: FixedClock;
  let changes: NameChange[];

  beforeEach(async () => {
    client = new DiscordClientFactory().create();
    // Alice is in both guilds, each on its own shard: one change reaches the client twice.
    gateway = new FakeDiscordGateway(client, {
      shardCount: 2,
      guilds: [
        {
          id: GUILD_A,
          shardId: 0,
          members: [
            apiMember(ALICE, { nick: 'Ali' }),
            apiMember(BOB),
            apiMember(LEGACY, { nick: 'Caz' }),
          ],
        },
        { id: GUILD_B, shardId: 1, members: [apiMember(ALICE)] },
      ],
    });
    clock = new FixedClock(at('2025-03-04T05:06:07.089Z'));
    changes = [];
    const outbox = { enqueue: (change: NameChange) => changes.push(change) };
    const settings = detectorSettings(
      { token: TEST_DISCORD_TOKEN, leaseMs: 30_000 },
      { keyPrefix: 'test' },
    );
    new NameChangeDetector(clock, outbox as unknown as DetectorOutbox, settings).watch(client);
    await client.login(TEST_DISCORD_TOKEN);
    await gateway.ready;
  });

  afterEach(async () => {
    await client.destroy();
  });

  it('emits a username change seen in two guilds on two shards once, with the old name', () => {
    expect([GUILD_A, GUILD_B].map((id) => client.guilds.cache.get(id)?.shardId)).toEqual([0, 1]);
    const renamed = { ...ALICE, username: 'alice_new' };
    gateway.memberUpdate(GUILD_A, apiMember(renamed, { nick: 'Ali' }));
    gateway.memberUpdate(GUILD_B, apiMember(renamed));
    expect(changes).toEqual([
      {
        userId: ALICE.id,
        type: 'username',
        name: 'alice',
        changedAt: at('2025-03-04T05:06:07.089Z'),
      },
    ]);
  });

  it('records the old global display name', () => {
    gateway.memberUpdate(GUILD_B, apiMember({ ...ALICE, global_name: 'Alice B.' }));
    expect(changes).toEqual([
      {
        userId: ALICE.id,
        type: 'displayname',
        name: 'Alice A.',
        changedAt: at('2025-03-04T05:06:07.089Z'),
      },
    ]);
  });

  it('records nothing when a global display name is set for the first time', () => {
    gateway.memberUpdate(GUILD_A, apiMember({ ...BOB, global_name: 'Bobby' }));
    expect(changes).toEqual([]);
    expect(client.users.cache.get(BOB.id)?.globalName).toBe('Bobby');
  });

  it('records the old global display name when it is removed', () => {
    gateway.memberUpdate(GUILD_B, apiMember({ ...ALICE, global_name: null }));
    expect(changes.map(({ type, name }) => ({ type, name }))).toEqual([
      { type: 'displayname', name: 'Alice A.' },
    ]);
  });

  it('records the old server nickname when it changes', () => {
    gateway.memberUpdate(GUILD_A, apiMember(ALICE, { nick: 'Ally' }));
    expect(changes).toEqual([
      {
        userId: ALICE.id,
        type: 'displayname',
        name: 'Ali',
        changedAt: at('2025-03-04T05:06:07.089Z'),
      },
    ]);
  });

  it('records the old server nickname when it is reset to none', () => {
    gateway.memberUpdate(GUILD_A, apiMember(ALICE, { nick: null }));
    expect(changes.map(({ type, name }) => ({ type, name }))).toEqual([
      { type: 'displayname', name: 'Ali' },
    ]);
  });

  it('records nothing for a first server nickname', () => {
    gateway.memberUpdate(GUILD_A, apiMember(BOB, { nick: 'Bobster' }));
    expect(changes).toEqual([]);
    expect(client.guilds.cache.get(GUILD_A)?.members.cache.get(BOB.id)?.nickname).toBe('Bobster');
  });

  it('records the username and the nickname changed in one packet, old values only', () => {
    gateway.memberUpdate(GUILD_A, apiMember({ ...ALICE, username: 'alice_new' }, { nick: 'Al' }));
    expect(changes).toEqual([
      {
        userId: ALICE.id,
        type: 'username',
        name: 'alice',
        changedAt: at('2025-03-04T05:06:07.089Z'),
      },
      {
        userId: ALICE.id,
        type: 'displayname',
        name: 'Ali',
        changedAt: at('2025-03-04T05:06:07.089Z'),
      },
    ]);
  });

  it('lets no new name leak in as an old display name when a first nickname comes with a rename', () => {
    gateway.memberUpdate(GUILD_A, apiMember({ ...BOB, username: 'bobby' }, { nick: 'B' }));
    expect(changes.map(({ userId, type, name }) => ({ userId, type, name }))).toEqual([
      { userId: BOB.id, type: 'username', name: 'bob' },
    ]);
  });

  it('records nothing for an avatar-only change', () => {
    let userUpdates = 0;
    client.on(Events.UserUpdate, () => (userUpdates += 1));
    gateway.memberUpdate(GUILD_A, apiMember({ ...ALICE, avatar: 'a1b2c3' }, { nick: 'Ali' }));
    expect(userUpdates).toBe(1); // discord.js reports it; the detector ignores it
    expect(changes).toEqual([]);
  });

  it('records nothing for a user it has not cached, keeps working, and records their next change', () => {
    gateway.memberUpdate(GUILD_A, apiMember(STRANGER, { nick: 'Who' }));
    expect(changes).toEqual([]);
    // Now cached (from that packet): a real previous value exists for the next change.
    gateway.memberUpdate(GUILD_A, apiMember({ ...STRANGER, username: 'known' }, { nick: 'Who' }));
    expect(changes.map(({ userId, type, name }) => ({ userId, type, name }))).toEqual([
      { userId: STRANGER.id, type: 'username', name: 'stranger' },
    ]);
  });

  it('records nothing when the old user or member is partial, even with a name on it', () => {
    const oldUser = uncachedUser(client, { id: STRANGER.id, global_name: 'Old Global' });
    expect([oldUser.partial, oldUser.globalName]).toEqual([true, 'Old Global']);
    client.emit(Events.UserUpdate, oldUser, uncachedUser(client, STRANGER));
    const oldMember = uncachedMember(client, GUILD_A, { user: STRANGER, nick: 'Old' });
    expect([oldMember.partial, oldMember.nickname]).toEqual([true, 'Old']);
    client.emit(
      Events.GuildMemberUpdate,
      oldMember,
      uncachedMember(client, GUILD_A, apiMember(STRANGER, { nick: 'New' })),
    );
    expect(changes).toEqual([]);
  });

  it("ignores the bot's own user and nickname updates", () => {
    gateway.userUpdate({ ...BOT_USER, username: 'renamed-bot' });
    gateway.memberUpdate(
      GUILD_A,
      apiMember({ ...BOT_USER, username: 'renamed-bot' }, { nick: 'B' }),
    );
    gateway.memberUpdate(
      GUILD_A,
      apiMember({ ...BOT_USER, username: 'renamed-bot' }, { nick: null }),
    );
    expect(client.user?.username).toBe('renamed-bot');
    expect(changes).toEqual([]);
  });

  it('records the move from a legacy "name#1234" to a unique username, even to the same name', () => {
    gateway.memberUpdate(GUILD_A, apiMember({ ...LEGACY, discriminator: '0' }, { nick: 'Caz' }));
    expect(changes).toEqual([
      {
        userId: LEGACY.id,
        type: 'username',
        name: 'carol#1234',
        changedAt: at('2025-03-04T05:06:07.089Z'),
      },
    ]);
  });

  it('stamps each change with the injected clock at the time of detection', () => {
    gateway.memberUpdate(GUILD_A, apiMember(ALICE, { nick: 'Ally' }));
    clock.time = at('2030-12-31T23:59:59.999Z');
    gateway.memberUpdate(GUILD_A, apiMember(ALICE, { nick: 'Allie' }));
    expect(changes.map(({ name, changedAt }) => ({ name, changedAt }))).toEqual([
      { name: 'Ali', changedAt: at('2025-03-04T05:06:07.089Z') },
      { name: 'Ally', changedAt: at('2030-12-31T23:59:59.999Z') },
    ]);
  });

  it('emits the same change reported twice within the duplicate window once', () => {
    const oldUser = client.users.cache.get(ALICE.id)!;
    const newUser = Object.assign(Object.create(oldUser) as object, oldUser, {
      username: 'alice_new',
    });
    client.emit(Events.UserUpdate, oldUser, newUser);
    clock.time = at('2025-03-04T05:06:16.000Z'); // 8.9 s later: inside the 10 s window
    client.emit(Events.UserUpdate, oldUser, newUser);
    clock.time = at('2025-03-04T05:06:17.089Z'); // the window has passed
    client.emit(Events.UserUpdate, oldUser, newUser);
    expect(changes.map(({ name, changedAt }) => ({ name, changedAt }))).toEqual([
      { name: 'alice', changedAt: at('2025-03-04T05:06:07.089Z') },
      { name: 'alice', changedAt: at('2025-03-04T05:06:17.089Z') },
    ]);
  });
});
