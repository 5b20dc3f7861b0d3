/**
 * The detector through outages of the gateway: a drop, RECONNECT, a zombie connection, a
 * session lost. In-process applications; Discord is the fake in test/support. Postgres down:
 * detector-postgres-outage.
 */
import { changesOf, changesOfOnceStored, joinedEach, newUser } from './support/detector.js';
import { GUILD_A, GUILD_B, twoServers, useDetectorApp } from './support/detector-app.js';
import { detectorFigures, reconciled } from './support/detector-metrics.js';
import { waitFor } from './support/ports.js';

describe('the detector across gateway reconnections', () => {
  const { fx, discord } = useDetectorApp({ guilds: twoServers(), heartbeatIntervalMs: 400 });

  /** A connection that has had no HELLO yet: the client knocking while the gateway is out. */
  const knocking = () => discord.connections.some((c) => !c.hello);

  it('records the changes Discord replays when the session is resumed after an outage', async () => {
    const bob = newUser('bob');
    const carol = newUser('carol');
    await joinedEach(discord, fx.db, bob, { [GUILD_A]: null });
    await joinedEach(discord, fx.db, carol, { [GUILD_A]: 'Caz' });
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
    await joinedEach(discord, fx.db, bob, { [GUILD_A]: null });
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
    await joinedEach(discord, fx.db, carol, { [GUILD_A]: 'Cazz' });
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
    await joinedEach(discord, fx.db, dave, { [GUILD_A]: null, [GUILD_B]: 'D' });
    await joinedEach(discord, fx.db, alice, { [GUILD_A]: 'Ali' });
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
