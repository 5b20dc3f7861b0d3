import type { APIGuildMember, APIUser } from 'discord.js';
import type { TestDatabase } from './database.js';
import { apiMember, apiUser, type FakeDiscord } from './fake-discord.js';
import { waitFor } from './ports.js';

/** A stored event, as the tests compare them: in storage (id) order. */
export interface RecordedEvent {
  id: string;
  userId: string;
  type: string;
  name: string;
  changedAt: string;
}

/** Every stored event, oldest id first. */
export async function recordedEvents(db: TestDatabase): Promise<RecordedEvent[]> {
  return db.query<RecordedEvent & Record<string, unknown>>(
    `SELECT id::text AS id, user_id AS "userId", type, name,
            to_char(changed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "changedAt"
       FROM name_change_events
      ORDER BY name_change_events.id`, // not the text column of the same name: "10" < "9"
  );
}

/** The events without their id and time, oldest first: what a test usually asserts exactly. */
export async function recordedChanges(db: TestDatabase) {
  return (await recordedEvents(db)).map(({ userId, type, name }) => ({ userId, type, name }));
}

/**
 * `changes` by user (in increasing id), each user's in the order stored: the detector keeps
 * each user's order, not one across users (it compares users of other partitions side by side).
 */
export function byUser<T extends { userId: string }>(changes: readonly T[]): T[] {
  return [...changes].sort(
    (a, b) =>
      a.userId.length - b.userId.length || (a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0),
  );
}

/** Waits until `count` events are stored, then returns them all (without ids and times), by user. */
export async function changesOnceStored(db: TestDatabase, count: number) {
  await waitFor(`${count} stored events`, async () => (await recordedEvents(db)).length >= count);
  return byUser(await recordedChanges(db));
}

/** The stored changes of `users` only (without ids and times), by user. */
export async function changesOf(db: TestDatabase, users: readonly APIUser[]) {
  const ids = new Set(users.map((user) => user.id));
  return byUser(await recordedChanges(db)).filter((change) => ids.has(change.userId));
}

/** Waits until `count` changes of `users` are stored, then returns theirs. */
export async function changesOfOnceStored(
  db: TestDatabase,
  users: readonly APIUser[],
  count: number,
) {
  await waitFor(
    `${count} stored changes of ${users.map((u) => u.username).join(', ')}`,
    async () => (await changesOf(db, users)).length >= count,
  );
  return changesOf(db, users);
}

let usersMade = 0n;

/**
 * A Discord user no other test of the file uses (ids from 720000000000000001 on): a test
 * that adds its own members sees only its own changes, whatever the others did.
 */
export function newUser(username: string, fields: Partial<APIUser> = {}): APIUser {
  usersMade += 1n;
  return apiUser(String(720_000_000_000_000_000n + usersMade), username, fields);
}

/**
 * `member` joins the server (GUILD_MEMBER_ADD): resolves once the detector knows its
 * nickname there, its first sighting in that server (which records nothing).
 */
export async function joined(
  discord: FakeDiscord,
  db: TestDatabase,
  guildId: string,
  member: APIGuildMember,
): Promise<void> {
  discord.addMember(guildId, member);
  await waitFor(`${member.user.username} known in server ${guildId}`, async () =>
    (await knownNames(db)).some(
      (k) => k.userId === member.user.id && k.field === 'nickname' && k.guildId === guildId,
    ),
  );
}

/** `user` joins each server of `nicks` with that nickname, and is known there. */
export async function joinedEach(
  discord: FakeDiscord,
  db: TestDatabase,
  user: APIUser,
  nicks: Record<string, string | null>,
): Promise<void> {
  for (const [guildId, nick] of Object.entries(nicks)) {
    await joined(discord, db, guildId, apiMember(user, { nick }));
  }
}

/** The detector's known names, sorted. */
export async function knownNames(db: TestDatabase) {
  return db.query<{ userId: string; field: string; guildId: string; name: string | null }>(
    `SELECT user_id AS "userId", field, guild_id AS "guildId", name
       FROM (SELECT user_id, 'username' AS field, '' AS guild_id, username AS name FROM known_users
             UNION ALL SELECT user_id, 'global_name', '', global_name FROM known_users
             UNION ALL SELECT user_id, 'nickname', guild_id, nickname FROM known_nicknames) k
      ORDER BY user_id, field, guild_id`,
  );
}
