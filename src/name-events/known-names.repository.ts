import { Injectable } from '@nestjs/common';
import { copyText, SqlService, textArray } from '../database/sql.service.js';
import type { KnownNameField } from './known-name.entity.js';

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
 * Every query on the known_names table. Statements join the caller's unit of work: the
 * detector reads and moves the names forward in the transaction that stores the changes.
 */
@Injectable()
export class KnownNamesRepository {
  constructor(private readonly sql: SqlService) {}

  /**
   * The known names of `members`: the user's own (username, global name) and their nickname
   * in that server, whatever fields the caller compares (absent: never seen). One index probe
   * per member, on the primary key's first column: a third of the probes of one per name,
   * and a third of Postgres's time for a batch of first sightings. At most three rows match a
   * member; the LIMIT also keeps the lateral subquery from being flattened into a join, for
   * which a table growing from empty (statistics not yet taken) got a hash join over the
   * whole table, once per batch. A user in several of the members' servers comes back once
   * per server.
   */
  async findOfMembers(members: readonly ObservedMember[]): Promise<KnownNameValue[]> {
    if (members.length === 0) return [];
    const rows = await this.sql.query<KnownNameValue>(
      `SELECT k.user_id AS "userId", k.field, k.guild_id AS "guildId", k.name, k.seen_at AS "seenAt"
         FROM unnest($1::text[], $2::text[]) AS member(user_id, guild_id)
        CROSS JOIN LATERAL (
              SELECT * FROM known_names n
               WHERE n.user_id = member.user_id AND n.guild_id IN ('', member.guild_id)
               LIMIT 3) k`,
      [textArray(members.map((m) => m.userId)), textArray(members.map((m) => m.guildId))],
    );
    for (const row of rows) row.seenAt = new Date(row.seenAt);
    return rows;
  }

  /**
   * Stores each value unless a newer one is stored already (an instance that lost the lease
   * may still be writing what it saw before the one that took over). `found`: what findOfMembers
   * returned in this transaction, under the partition locks of its users (NameEventLocks), the
   * only writer of their keys: a key not among them is inserted plainly, without the upsert's
   * conflict handling (most of the cost of a first sighting). Should one be there after all,
   * the statement fails and the transaction with it, for the caller to retry.
   */
  async saveMany(
    values: readonly KnownNameValue[],
    found?: readonly KnownNameKey[],
  ): Promise<void> {
    if (!found) return this.upsert(values);
    // A first sighting finds nothing stored: no key to make.
    const stored = new Set(found.map(keyOf));
    const fresh = stored.size === 0 ? values : values.filter((v) => !stored.has(keyOf(v)));
    await this.insert(fresh);
    if (fresh.length < values.length) await this.upsert(values.filter((v) => stored.has(keyOf(v))));
  }

  /**
   * Keys not stored yet: by COPY where the database takes it (Postgres spends about 40 % less
   * on a first sighting's 3,000 rows than through INSERT … unnest), else by INSERT.
   */
  private async insert(values: readonly KnownNameValue[]): Promise<void> {
    if (values.length === 0) return;
    if (this.sql.copySupported) {
      return this.sql.copyIn(
        'COPY known_names (user_id, field, guild_id, name, seen_at) FROM STDIN',
        copyText(valueColumns(values)),
      );
    }
    await this.sql.query(
      `INSERT INTO known_names (user_id, field, guild_id, name, seen_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])`,
      valueColumns(values).map(textArray),
    );
  }

  private async upsert(values: readonly KnownNameValue[]): Promise<void> {
    if (values.length === 0) return;
    await this.sql.query(
      `INSERT INTO known_names (user_id, field, guild_id, name, seen_at)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
       ON CONFLICT (user_id, field, guild_id) DO UPDATE
          SET name = EXCLUDED.name, seen_at = EXCLUDED.seen_at
        WHERE known_names.seen_at <= EXCLUDED.seen_at`,
      valueColumns(values).map(textArray),
    );
  }

  /** Deletes every known name of the user. */
  async deleteOfUser(userId: string): Promise<void> {
    await this.sql.query('DELETE FROM known_names WHERE user_id = $1', [userId]);
  }
}

function keyOf({ userId, field, guildId }: KnownNameKey): string {
  return `${userId}\u0000${field}\u0000${guildId}`;
}

/** The values' columns, in the table's order: the key's, the name and seen_at (ISO). */
function valueColumns(values: readonly KnownNameValue[]): (string | null)[][] {
  const iso = isoOf();
  return [...keyColumns(values), values.map((v) => v.name), values.map((v) => iso(v.seenAt))];
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

/** The keys' columns: user ids, fields and servers. */
function keyColumns(keys: readonly KnownNameKey[]): string[][] {
  return [keys.map((k) => k.userId), keys.map((k) => k.field), keys.map((k) => k.guildId)];
}
