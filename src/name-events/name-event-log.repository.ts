import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { PUBLISH_LOCK_KEY } from './name-event-locks.js';
import type { NameType, NewNameEvent, StoredNameEvent, StoredOutcome } from './name-event.types.js';

// Postgres formats the timestamp itself, in the contract's form, so rows need no Date round trip.
// Unqualified: `changed_at` is the column of whatever the statement reads (the events, a CTE of them).
export const UTC_ISO = `to_char(changed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
// A stored time exactly, to the microsecond Postgres keeps: where a page of history or search ends.
export const UTC_ISO_MICROS = `to_char(changed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

export const STORED_COLUMNS = `id::text AS id, user_id AS "userId", type, name, ${UTC_ISO} AS "changedAt"`;

/** The identity of an event: the four fields of the unique key, the time in UTC ISO form. */
function keyOf(event: { userId: string; type: string; name: string; changedAt: Date | string }) {
  const at = typeof event.changedAt === 'string' ? event.changedAt : event.changedAt.toISOString();
  return JSON.stringify([event.userId, event.type, event.name, at]);
}

/** Which events a reader wants: one user's, one type's (null: any). */
export interface EventFilter {
  userId: string | null;
  type: NameType | null;
}

/** Events a consumer has handled, as `findHandled` reads them. */
export interface HandledEvents {
  /** The oldest matching events after the id asked, in id order. */
  events: StoredNameEvent[];
  /** Once `events` are done, every matching event up to this id is. */
  through: string;
}

/**
 * The event log, name_change_events, in id order: storing, reading after an id, deleting;
 * and, as other modules read it (the domain's read port), where it ends, the events a
 * consumer has handled, how many are left after a position (erased events are not there).
 * (Where each consumer is, and its next batch, are ConsumerPositionsRepository's.)
 * (Users' histories are NameHistoryRepository's.) Statements join the caller's transaction
 * or session; a failure of the database is a StorageUnavailableError.
 */
@Injectable()
export class NameEventLogRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /**
   * Stores each event unless the same four fields are stored already, in one statement, new
   * ids following the order of `events`; returns every stored event, in that order, with
   * `created` telling new from repeat. Runs where the caller holds the publish lock.
   */
  async insertOrFindMany(events: readonly NewNameEvent[]): Promise<StoredOutcome[]> {
    const columns = [
      events.map((e) => e.userId),
      events.map((e) => e.type),
      events.map((e) => e.name),
      events.map((e) => e.changedAt.toISOString()),
    ];
    const inserted = await this.txHost.tx.query<StoredNameEvent[]>(
      `INSERT INTO name_change_events (user_id, type, name, changed_at)
       SELECT user_id, type, name, changed_at
         FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])
              WITH ORDINALITY AS e(user_id, type, name, changed_at, n)
        ORDER BY n
       ON CONFLICT ON CONSTRAINT name_change_events_identity_key DO NOTHING
       RETURNING ${STORED_COLUMNS}`,
      columns,
    );
    const stored = new Map(inserted.map((row) => [keyOf(row), row]));
    const repeats = new Set(events.map(keyOf).filter((key) => !stored.has(key)));
    if (repeats.size > 0) {
      const existing = await this.txHost.tx.query<StoredNameEvent[]>(
        `SELECT ${STORED_COLUMNS}
           FROM name_change_events
          WHERE (user_id, type, name, changed_at) IN (
                SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]))`,
        columns,
      );
      for (const row of existing) stored.set(keyOf(row), row);
    }
    const firstSeen = new Set<string>();
    return events.map((event) => {
      const key = keyOf(event);
      // The first input of an inserted row created it; a later identical input is a repeat.
      const created = !repeats.has(key) && !firstSeen.has(key);
      firstSeen.add(key);
      // The row's fields are the event's: its key is theirs.
      return { event: stored.get(key)!, created };
    });
  }

  /**
   * The newest stored id whose broadcast is done: the statement also waits for the publish
   * lock (shared), so a publish that stored an event this statement sees has been
   * acknowledged by the broker when it returns. ('0' when nothing is stored.)
   */
  async latestPublishedId(): Promise<string> {
    const [row] = await this.txHost.tx.query<{ id: string | null }[]>(
      `SELECT (SELECT max(id)::text FROM name_change_events) AS id,
              (SELECT pg_advisory_xact_lock_shared($1)) IS NULL AS locked`,
      [PUBLISH_LOCK_KEY],
    );
    return row?.id ?? '0';
  }

  /**
   * Which stored events (optionally one user's) a replay after `afterId` covers: the ids of
   * the oldest and the newest of at most the newest `limit` of them; undefined when none.
   * Only ids are read here: the events themselves are read page by page (findPage).
   */
  async findReplayWindow(
    afterId: string,
    { userId, limit }: { userId?: string; limit: number },
  ): Promise<{ first: string; last: string } | undefined> {
    const [row] = await this.txHost.tx.query<{ first: string | null; last: string | null }[]>(
      `SELECT min(id)::text AS first, max(id)::text AS last
         FROM (SELECT id FROM name_change_events
                WHERE id > $1 AND ($2::text IS NULL OR user_id = $2)
                ORDER BY id DESC
                LIMIT $3) newest`,
      [afterId, userId ?? null, limit],
    );
    return row?.first && row.last ? { first: row.first, last: row.last } : undefined;
  }

  /**
   * At most `limit` events (optionally one user's) with ids after `afterId` and up to
   * `upToId`, oldest first: one page of a replay.
   */
  findPage(
    afterId: string,
    { upToId, userId, limit }: { upToId: string; userId?: string; limit: number },
  ): Promise<StoredNameEvent[]> {
    // Qualified: a bare `id` in ORDER BY names the output column, the text one (10 < 9).
    return this.txHost.tx.query<StoredNameEvent[]>(
      `SELECT ${STORED_COLUMNS}
               FROM name_change_events
              WHERE id > $1 AND id <= $2 AND ($3::text IS NULL OR user_id = $3)
              ORDER BY name_change_events.id
              LIMIT $4`,
      [afterId, upToId, userId ?? null, limit],
    );
  }

  /** Deletes every event of the user; returns how many. */
  async deleteOfUser(userId: string): Promise<number> {
    const [, rowCount] = await this.txHost.tx.query<[unknown, number]>(
      'DELETE FROM name_change_events WHERE user_id = $1',
      [userId],
    );
    return rowCount;
  }

  /** Deletes at most `limit` events that changed before `cutoff`, oldest first; returns how many. */
  async deleteChangedBefore(cutoff: Date, limit: number): Promise<number> {
    const [, rowCount] = await this.txHost.tx.query<[unknown, number]>(
      `DELETE FROM name_change_events
              WHERE id IN (SELECT id FROM name_change_events
                            WHERE changed_at < $1
                            ORDER BY changed_at
                            LIMIT $2)`,
      [cutoff, limit],
    );
    return rowCount;
  }

  /** The newest stored event's id ('0' when none). */
  async latestId(): Promise<string> {
    const [row] = await this.txHost.tx.query<{ id: string }[]>(
      'SELECT coalesce(max(id), 0)::text AS id FROM name_change_events',
    );
    return row.id;
  }

  /**
   * At most `limit` events matching `filter` stored after `afterId` that the consumer named
   * `consumer` has handled (every event up to its position is committed, in id order).
   */
  async findHandled(
    consumer: string,
    afterId: string,
    filter: EventFilter,
    limit: number,
  ): Promise<HandledEvents> {
    const rows = await this.txHost.tx.query<({ position: string } & Partial<StoredNameEvent>)[]>(
      `SELECT c.position::text AS position, e.id::text AS id, e.user_id AS "userId", e.type,
                    e.name, ${UTC_ISO} AS "changedAt"
               FROM name_event_consumers c
               LEFT JOIN LATERAL (${matching('$2', '$3', '$4', 'AND e.id <= c.position ORDER BY e.id LIMIT $5')}) e ON true
              WHERE c.name = $1
              ORDER BY e.id`,
      [consumer, afterId, filter.userId, filter.type, limit],
    );
    const events = rows
      .filter((row) => row.id !== null)
      .map(({ id, userId, type, name, changedAt }) => ({ id, userId, type, name, changedAt }));
    const position = rows[0]?.position ?? afterId;
    const through =
      events.length < limit
        ? String(BigInt(position) > BigInt(afterId) ? position : afterId)
        : events[events.length - 1].id!;
    return { events: events as StoredNameEvent[], through };
  }

  /** For each of `positions`, how many events matching it are stored after its `afterId`. */
  async countAfter(positions: readonly (EventFilter & { afterId: string })[]): Promise<number[]> {
    if (positions.length === 0) return [];
    const rows = await this.txHost.tx.query<{ count: number }[]>(
      `SELECT (SELECT count(*) FROM (${matching('p.after_id', 'p.user_id', 'p.type')}) e)::int AS count
               FROM unnest($1::bigint[], $2::text[], $3::text[]) WITH ORDINALITY AS p(after_id, user_id, type, n)
              ORDER BY p.n`,
      [
        positions.map((p) => p.afterId),
        positions.map((p) => p.userId),
        positions.map((p) => p.type),
      ],
    );
    return rows.map((row) => row.count);
  }
}

/**
 * The events after id `after` of user `userId` (null: anyone's) and type `type` (null: any),
 * each branch closed by `rest` (more conditions, an order, a limit): a user's through the
 * user's index, the others in id order. One condition for both (`userId IS NULL OR …`) walked
 * every event in id order for a user's few (20 of a user's behind 2,000,000 events: 700 ms,
 * against 0.6 ms), and so did one order and limit over both branches.
 */
function matching(after: string, userId: string, type: string, rest = ''): string {
  const branch = (filter: string) =>
    `(SELECT * FROM name_change_events e
       WHERE ${filter} AND e.id > ${after} AND (${type}::text IS NULL OR e.type = ${type}) ${rest})`;
  return `${branch(`${userId}::text IS NULL`)} UNION ALL ${branch(`e.user_id = ${userId}`)}`;
}
