/**
 * The detector's comparisons side by side (DETECTOR_COMPARE_CONCURRENCY): each holds the
 * partition locks of the users it compares, so users of another partition go on while one
 * waits, and an erasure of a user (which holds that user's partition lock) keeps the
 * comparisons of that user away. The locks are held by a test session here, as another
 * instance would hold them.
 */
import type { APIUser } from 'discord.js';
import pg from 'pg';
import { PARTITION_LOCK_CLASS } from '../src/name-events/name-event-locks.js';
import { userPartitionOf } from '../src/name-events/name-event.types.js';
import { changesOf, changesOfOnceStored, joinedEach, newUser } from './support/detector.js';
import { GUILD_A, twoServers, useDetectorApp } from './support/detector-app.js';
import { waitFor } from './support/ports.js';

/** A new user whose partition's lane (of two) is `lane`. */
function userOfLane(username: string, lane: number): APIUser {
  for (;;) {
    const user = newUser(username);
    if (userPartitionOf(user.id) % 2 === lane) return user;
  }
}

describe('comparisons side by side, under partition locks (Postgres, Redis)', () => {
  const { fx, discord } = useDetectorApp(
    { guilds: twoServers() },
    { env: { DETECTOR_COMPARE_CONCURRENCY: '2' } },
  );
  let other: pg.Client;

  beforeEach(async () => {
    other = new pg.Client({ connectionString: fx.db.url });
    await other.connect();
  });
  afterEach(() => other.end());

  /** Renames `user` live, in server A, to `username`. */
  const renamed = (user: APIUser, username: string) => discord.changeUser(user.id, { username });

  const waitingOnLock = () =>
    waitFor(
      'a comparison waiting on a lock',
      async () => (await fx.db.sessionsWaitingOnLock(true)) === 1,
    );

  it("records a user of another partition while one user's partition is held", async () => {
    const held = userOfLane('held', 0);
    const free = userOfLane('free', 1);
    await joinedEach(discord, fx.db, held, { [GUILD_A]: null });
    await joinedEach(discord, fx.db, free, { [GUILD_A]: null });
    const partition = userPartitionOf(held.id);
    await other.query('SELECT pg_advisory_lock($1, $2)', [PARTITION_LOCK_CLASS, partition]);
    renamed(held, 'held2');
    await waitingOnLock();
    renamed(free, 'free2');
    expect(await changesOfOnceStored(fx.db, [free], 1)).toEqual([
      { userId: free.id, type: 'username', name: 'free' },
    ]);
    expect(await changesOf(fx.db, [held])).toEqual([]);
    await other.query('SELECT pg_advisory_unlock($1, $2)', [PARTITION_LOCK_CLASS, partition]);
    expect(await changesOfOnceStored(fx.db, [held, free], 2)).toEqual([
      { userId: held.id, type: 'username', name: 'held' },
      { userId: free.id, type: 'username', name: 'free' },
    ]);
  });

  it("compares nothing of users whose erasures hold their partitions' locks, then each change once", async () => {
    const first = userOfLane('first', 0);
    const second = userOfLane('second', 1);
    await joinedEach(discord, fx.db, first, { [GUILD_A]: null });
    await joinedEach(discord, fx.db, second, { [GUILD_A]: null });
    const partitions = [userPartitionOf(first.id), userPartitionOf(second.id)];
    for (const partition of partitions) {
      await other.query('SELECT pg_advisory_lock($1, $2)', [PARTITION_LOCK_CLASS, partition]);
    }
    renamed(first, 'first2');
    renamed(second, 'second2');
    await waitFor(
      'both lanes waiting on a partition lock',
      async () => (await fx.db.sessionsWaitingOnLock(true)) === 2,
    );
    expect(await changesOf(fx.db, [first, second])).toEqual([]);
    for (const partition of partitions) {
      await other.query('SELECT pg_advisory_unlock($1, $2)', [PARTITION_LOCK_CLASS, partition]);
    }
    expect(await changesOfOnceStored(fx.db, [first, second], 2)).toEqual([
      { userId: first.id, type: 'username', name: 'first' },
      { userId: second.id, type: 'username', name: 'second' },
    ]);
  });
});
