/**
 * What the detector records for each kind of change it sees live, and what it leaves out
 * (docs/detector.md, "What is recorded"). Two servers on two shards; Discord is the fake in test/support.
 */
import { changesOfOnceStored, joinedEach, knownNames, newUser } from './support/detector.js';
import { GUILD_A, GUILD_B, twoServers, useDetectorApp } from './support/detector-app.js';
import { apiMember, BOT_USER } from './support/fake-discord.js';

describe('what the detector records (Postgres, Redis, two shards)', () => {
  const { fx, discord } = useDetectorApp({ guilds: twoServers(1), shardCount: 2 });

  it('records a global display name, a nickname reset and a move off the legacy name#1234, once each', async () => {
    const alice = newUser('alice', { global_name: 'Alice A.' });
    const carol = newUser('carol', { discriminator: '1234' });
    await joinedEach(discord, fx.db, alice, { [GUILD_A]: 'Ali' });
    await joinedEach(discord, fx.db, carol, { [GUILD_A]: 'Caz' });
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
    const dave = newUser('dave', { global_name: 'Dave' });
    const bob = newUser('bob');
    const alice = newUser('alice', { global_name: 'Alice A.' });
    const newcomer = newUser('newcomer', { global_name: 'New' });
    const carol = newUser('carol');
    const dino = newUser('dino');
    await joinedEach(discord, fx.db, dave, { [GUILD_A]: null });
    await joinedEach(discord, fx.db, bob, { [GUILD_A]: null });
    await joinedEach(discord, fx.db, alice, { [GUILD_B]: null });
    await joinedEach(discord, fx.db, carol, { [GUILD_A]: 'Caz' });
    await joinedEach(discord, fx.db, dino, { [GUILD_B]: 'D' });
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
