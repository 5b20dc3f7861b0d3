import { Injectable } from '@nestjs/common';
import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { textArray } from '../database/index.js';

/** The names the detector compares: a user's own two (known_users) and a member's nickname. */
export type KnownNameField = 'username' | 'global_name' | 'nickname';

/** Identifies one known name: `guildId` is '' for a user's own names. */
export interface KnownNameKey {
  userId: string;
  field: KnownNameField;
  guildId: string;
}

/** A user as a member of one server. */
export interface ObservedMember {
  userId: string;
  guildId: string;
}

export interface KnownNameValue extends KnownNameKey {
  name: string | null;
  seenAt: Date;
}

/**
 * Every query on the detector's known names. The detector sees one value per name
 * (KnownNameValue); the tables keep one row per user (known_users: username and global name)
 * and one per member (known_nicknames), which is what a first sighting costs: two rows into
 * two narrow keys, not three into one wide key. Statements join the caller's unit of work: the
 * detector reads and moves the names forward in the transaction that stores the changes.
 */
@Injectable()
export class KnownNamesRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /**
   * The known names of `members`: the user's own (username, and global name, null when none is
   * known) and their nickname in that server (absent: never seen). A probe of known_users per
   * member, and of known_nicknames only for a user found there: a member's row is written with
   * or after its user's and deleted with it (saveMany, deleteOfUser), so a user not known has
   * no nickname known, and a first sighting costs one probe, not two (11 ms against 17 for
   * 2,500 members). Each is a LATERAL … LIMIT 1, which keeps it from being flattened into a
   * join: for a table growing from empty (statistics not yet taken) the planner chose a hash
   * join over the whole table, once per batch. A user in several of the members' servers
   * comes back once per server.
   */
  async findOfMembers(members: readonly ObservedMember[]): Promise<KnownNameValue[]> {
    if (members.length === 0) return [];
    const rows = await this.txHost.tx.query<MemberRow[]>(
      `SELECT m.user_id AS "userId", m.guild_id AS "guildId", u.username,
              u.global_name AS "globalName", u.seen_at AS "userSeenAt",
              n.found AS "nicknameFound", n.nickname, n.seen_at AS "nicknameSeenAt"
         FROM unnest($1::text[], $2::text[]) AS m(user_id, guild_id)
        CROSS JOIN LATERAL (
              SELECT username, global_name, seen_at FROM known_users
               WHERE user_id = m.user_id LIMIT 1) u
         LEFT JOIN LATERAL (
              -- u.username: after u's probe, for the users found only (the planner may not reorder)
              SELECT true AS found, nickname, seen_at FROM known_nicknames
               WHERE u.username IS NOT NULL AND user_id = m.user_id AND guild_id = m.guild_id
               LIMIT 1) n ON true`,
      [textArray(members.map((m) => m.userId)), textArray(members.map((m) => m.guildId))],
    );
    const values: KnownNameValue[] = [];
    for (const { userId, guildId, ...row } of rows) {
      const seenAt = new Date(row.userSeenAt);
      values.push(
        { userId, field: 'username', guildId: '', name: row.username, seenAt },
        { userId, field: 'global_name', guildId: '', name: row.globalName, seenAt },
      );
      if (row.nicknameFound) {
        const seenAt = new Date(row.nicknameSeenAt!);
        values.push({ userId, field: 'nickname', guildId, name: row.nickname, seenAt });
      }
    }
    return values;
  }

  /**
   * Stores each value unless a newer one is stored already (an instance that lost the lease
   * may still be writing what it saw before the one that took over). `found`: what findOfMembers
   * returned in this transaction, under the partition locks of its users (NameEventLocks), the
   * only writer of their rows: a row not among them is inserted plainly, without an upsert's
   * conflict handling (most of the cost of a first sighting), and one among them updated.
   * Should a row be there after all, the insert fails and the transaction with it, for the
   * caller to retry.
   */
  async saveMany(values: readonly KnownNameValue[], found: readonly KnownNameKey[]): Promise<void> {
    const storedUsers = new Set(found.filter((k) => k.field === 'username').map((k) => k.userId));
    const storedMembers = new Set(found.filter((k) => k.field === 'nickname').map(memberOf));
    const { stored = [], fresh = [] } = Object.groupBy(usersOf(values), (u) =>
      storedUsers.has(u.userId) ? 'stored' : 'fresh',
    );
    const { stored: storedNicknames = [], fresh: freshNicknames = [] } = Object.groupBy(
      values.filter((v) => v.field === 'nickname'),
      (v) => (storedMembers.has(memberOf(v)) ? 'stored' : 'fresh'),
    );
    const iso = isoOf();
    await this.insert('known_users (user_id, username, global_name, seen_at)', [
      fresh.map((u) => u.userId),
      fresh.map((u) => u.username ?? null),
      fresh.map((u) => u.globalName ?? null),
      fresh.map((u) => iso(u.seenAt)),
    ]);
    await this.insert('known_nicknames (user_id, guild_id, nickname, seen_at)', [
      freshNicknames.map((v) => v.userId),
      freshNicknames.map((v) => v.guildId),
      freshNicknames.map((v) => v.name),
      freshNicknames.map((v) => iso(v.seenAt)),
    ]);
    await this.update(
      `known_users AS k
          SET username = coalesce(u.username, k.username),
              global_name = CASE WHEN u.said_global THEN u.global_name ELSE k.global_name END,
              seen_at = u.seen_at
         FROM unnest($1::text[], $2::text[], $3::text[], $4::boolean[], $5::timestamptz[])
              AS u(user_id, username, global_name, said_global, seen_at)
        WHERE k.user_id = u.user_id AND k.seen_at <= u.seen_at`,
      [
        stored.map((u) => u.userId),
        stored.map((u) => u.username ?? null),
        stored.map((u) => u.globalName ?? null),
        stored.map((u) => (u.globalName === undefined ? 'f' : 't')),
        stored.map((u) => iso(u.seenAt)),
      ],
    );
    await this.update(
      `known_nicknames AS k SET nickname = n.nickname, seen_at = n.seen_at
         FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])
              AS n(user_id, guild_id, nickname, seen_at)
        WHERE k.user_id = n.user_id AND k.guild_id = n.guild_id AND k.seen_at <= n.seen_at`,
      [
        storedNicknames.map((v) => v.userId),
        storedNicknames.map((v) => v.guildId),
        storedNicknames.map((v) => v.name),
        storedNicknames.map((v) => iso(v.seenAt)),
      ],
    );
  }

  /** Deletes every known name of the user. */
  async deleteOfUser(userId: string): Promise<void> {
    await this.txHost.tx.query('DELETE FROM known_users WHERE user_id = $1', [userId]);
    await this.txHost.tx.query('DELETE FROM known_nicknames WHERE user_id = $1', [userId]);
  }

  /**
   * Rows not stored yet, into `target` (the table and its columns, the last a timestamptz), by
   * one INSERT … unnest. (COPY saved Postgres time on a first sighting, but moved the
   * detector's rate within the noise, well above its target.)
   */
  private async insert(target: string, columns: (string | null)[][]): Promise<void> {
    if (columns[0].length === 0) return;
    const types = columns.map(
      (_, i) => `$${i + 1}::${i === columns.length - 1 ? 'timestamptz' : 'text'}[]`,
    );
    await this.txHost.tx.query(
      `INSERT INTO ${target} SELECT * FROM unnest(${types.join(', ')})`,
      columns.map(textArray),
    );
  }

  /** `UPDATE ${statement}`, its parameters the columns of the rows stored already (if any). */
  private async update(statement: string, columns: (string | null)[][]): Promise<void> {
    if (columns[0].length === 0) return;
    await this.txHost.tx.query(`UPDATE ${statement}`, columns.map(textArray));
  }
}

/** One row of findOfMembers: a known user's names, and the nickname in that server if known. */
interface MemberRow {
  userId: string;
  guildId: string;
  username: string;
  globalName: string | null;
  userSeenAt: Date;
  nicknameFound: boolean | null;
  nickname: string | null;
  nicknameSeenAt: Date | null;
}

/** A user's row as saved: a name left undefined is not moved forward. */
interface UserNames {
  userId: string;
  username?: string;
  globalName?: string | null;
  seenAt: Date;
}

/**
 * The user names among `values`, one row per user: a name not among them is left as stored
 * (undefined), and the row is seen when the latest of them was (the staleness of both).
 */
function usersOf(values: readonly KnownNameValue[]): UserNames[] {
  const users = new Map<string, UserNames>();
  for (const { userId, field, name, seenAt } of values) {
    if (field === 'nickname') continue;
    let user = users.get(userId);
    if (!user) users.set(userId, (user = { userId, seenAt }));
    if (field === 'username') user.username = name!;
    else user.globalName = name;
    if (seenAt > user.seenAt) user.seenAt = seenAt;
  }
  return [...users.values()];
}

function memberOf({ userId, guildId }: ObservedMember): string {
  return `${userId}\u0000${guildId}`;
}

/** Dates in ISO form, each formatted once per run of values seen at the same time. */
function isoOf(): (date: Date) => string {
  let last: number | undefined;
  let iso = '';
  return (date) => {
    if (date.getTime() !== last) {
      last = date.getTime();
      iso = date.toISOString();
    }
    return iso;
  };
}
