import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import DataLoader from 'dataloader';
import { MetricsService } from '../metrics/metrics.service.js';
import type { ClientBase, QueryConfig, QueryResultRow } from 'pg';
import { DataSource } from 'typeorm';
import {
  StorageUnavailableError,
  type NameEntry,
  type NewNameEvent,
  type SqlSession,
  type StoredNameEvent,
} from './name-event.types.js';

/**
 * The key of the Postgres advisory lock every publish holds from its insert until the broker
 * has acknowledged it: any fixed number, the same in every instance ("pgpublsh" in ASCII).
 */
export const PUBLISH_LOCK_KEY = '8099296189474205800';

/**
 * The advisory lock under which the detector compares with its known names ("pgdetect" in
 * ASCII): one comparison at a time, on every instance. Always taken before the publish lock.
 */
const DETECT_LOCK_KEY = '8099552841756402548';

// Postgres formats the timestamp itself, in the contract's form, so rows need no Date round trip.
const UTC_ISO = `to_char(changed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
// A stored time exactly, to the microsecond Postgres keeps: where a page of history ends.
const UTC_ISO_MICROS = `to_char(changed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** The most users one batched history statement asks for. */
const HISTORY_BATCH_MAX_USERS = 100;

const STORED_COLUMNS = `id::text AS id, user_id AS "userId", type, name, ${UTC_ISO} AS "changedAt"`;

/** The identity of an event: the four fields of the unique key, the time in UTC ISO form. */
function keyOf(event: { userId: string; type: string; name: string; changedAt: Date | string }) {
  const at = typeof event.changedAt === 'string' ? event.changedAt : event.changedAt.toISOString();
  return JSON.stringify([event.userId, event.type, event.name, at]);
}

/**
 * A place in a user's history, whose order is (changedAt, id): the stored time to the
 * microsecond (`YYYY-MM-DDTHH:MM:SS.ffffffZ`, or `-infinity` / `infinity`) and the id.
 */
export interface HistoryPosition {
  at: string;
  id: string;
}

/** Before every entry, and after every entry. */
export const HISTORY_START: HistoryPosition = { at: '-infinity', id: '0' };
export const HISTORY_END: HistoryPosition = { at: 'infinity', id: '0' };

/** The entries strictly between two positions, at most `limit` of them. */
export interface HistoryRange {
  after: HistoryPosition;
  before: HistoryPosition;
  /** Default: all of them. */
  limit?: number;
  /** Take the `limit` entries closest to `before` rather than to `after`. */
  fromEnd: boolean;
}

export interface HistoryPage {
  /** Oldest first, whichever end the page was taken from. */
  entries: NameEntry[];
  /** Where the first and the last entry are (undefined when there are none). */
  first?: HistoryPosition;
  last?: HistoryPosition;
  /** Whether the range holds entries beyond the page, on the side away from its end. */
  more: boolean;
}

type HistoryRow = NameEntry & HistoryPosition;
/** A database session held for a sequence of statements (the publish lock's). */
export type Session = ClientBase;

/** A stored event, and whether this call stored it (false: the same four fields already were). */
export interface StoredOutcome {
  event: StoredNameEvent;
  created: boolean;
}

/**
 * Every query on the name_change_events table, named for what it is for. Statements run on a
 * connection taken from TypeORM's pool through a QueryRunner; a failure of the database is a
 * StorageUnavailableError.
 */
@Injectable()
export class NameChangeEventRepository {
  /**
   * Whole-history reads, batched: every read asked while the event loop polls one round of
   * sockets goes out as one statement (dispatched with setImmediate, after the requests that
   * round brought in have reached here). Nothing is cached (`cache: false`): a read is never
   * answered from a statement sent before it was asked.
   */
  private readonly historyReads = new DataLoader<string, NameEntry[]>(
    (userIds) => this.findHistories(userIds),
    {
      cache: false,
      maxBatchSize: HISTORY_BATCH_MAX_USERS,
      batchScheduleFn: (dispatch) => setImmediate(dispatch),
    },
  );

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * The user's whole history, oldest first (ties in storage order). Reads that arrive
   * together share one statement (see `historyReads`): each is answered from a query sent
   * after it was asked, so it sees every write committed before it.
   */
  findHistory(userId: string): Promise<NameEntry[]> {
    return this.historyReads.load(userId);
  }

  /**
   * The whole histories of several users in one statement, in the order of `userIds`. The
   * hot read: a named statement, parsed and planned once per connection; one round trip to
   * Postgres for a batch instead of one per request is most of what a history read costs
   * (BENCHMARKS.md).
   */
  private async findHistories(userIds: readonly string[]): Promise<NameEntry[][]> {
    this.metrics.historyReadsPerStatement.observe(userIds.length);
    const distinct = [...new Set(userIds)];
    const rows = await this.run<NameEntry & { userId: string }>({
      name: 'histories',
      text: `SELECT user_id AS "userId", type, name, ${UTC_ISO} AS "changedAt"
               FROM name_change_events
              WHERE user_id = ANY($1::text[])
              ORDER BY user_id, changed_at, id`,
      values: [distinct],
    });
    const byUser = new Map<string, NameEntry[]>(distinct.map((id) => [id, []]));
    for (const { userId, type, name, changedAt } of rows) {
      byUser.get(userId)!.push({ type, name, changedAt });
    }
    return userIds.map((id) => byUser.get(id)!);
  }

  /**
   * One page of the user's history: the entries strictly between two positions in
   * (changedAt, id) order, from either end. A row comparison on the index's own columns, so
   * the index is entered right at the page, however deep; one row past the limit tells
   * whether more remain.
   */
  async findHistoryPage(userId: string, range: HistoryRange): Promise<HistoryPage> {
    // Qualified: a bare `id` in ORDER BY names the output column, the text one (10 < 9).
    const order = range.fromEnd
      ? 'changed_at DESC, name_change_events.id DESC'
      : 'changed_at, name_change_events.id';
    const rows = await this.run<HistoryRow>({
      name: range.fromEnd ? 'history-page-from-end' : 'history-page',
      text: `SELECT type, name, ${UTC_ISO} AS "changedAt", ${UTC_ISO_MICROS} AS at, id::text AS id
               FROM name_change_events
              WHERE user_id = $1
                AND (changed_at, id) > ($2::timestamptz, $3::bigint)
                AND (changed_at, id) < ($4::timestamptz, $5::bigint)
              ORDER BY ${order}
              LIMIT $6`,
      values: [
        userId,
        range.after.at,
        range.after.id,
        range.before.at,
        range.before.id,
        range.limit === undefined ? null : range.limit + 1,
      ],
    });
    const more = range.limit !== undefined && rows.length > range.limit;
    if (more) rows.pop();
    if (range.fromEnd) rows.reverse();
    const first = rows[0];
    const last = rows[rows.length - 1];
    return {
      entries: rows.map(({ type, name, changedAt }) => ({ type, name, changedAt })),
      first: first && { at: first.at, id: first.id },
      last: last && { at: last.at, id: last.id },
      more,
    };
  }

  /**
   * Runs `work` on one session while it holds the publish lock. A session that may still hold
   * the lock (the unlock failed) is closed rather than returned to the pool.
   */
  underPublishLock<T>(work: (session: Session) => Promise<T>): Promise<T> {
    return this.withSession(async (session, discard) => {
      await storage(() => session.query('SELECT pg_advisory_lock($1)', [PUBLISH_LOCK_KEY]));
      try {
        return await work(session);
      } finally {
        await this.unlockPublish(session, discard);
      }
    });
  }

  /**
   * Runs `work` in one transaction that holds both locks, the detect lock first (the order the
   * detector takes them in): for what removes a user's data, so that no publish and no
   * comparison of the detector is under way meanwhile, and each is wholly before or after it.
   */
  underAllLocks<T>(work: (session: Session) => Promise<T>): Promise<T> {
    return this.withSession(async (session, discard) => {
      let locked = false;
      await storage(() => session.query('BEGIN'));
      try {
        await storage(() => session.query('SELECT pg_advisory_xact_lock($1)', [DETECT_LOCK_KEY]));
        await storage(() => session.query('SELECT pg_advisory_lock($1)', [PUBLISH_LOCK_KEY]));
        locked = true;
        const result = await work(session);
        await storage(() => session.query('COMMIT'));
        return result;
      } catch (error) {
        await session.query('ROLLBACK').catch(discard);
        throw error;
      } finally {
        if (locked) await this.unlockPublish(session, discard);
      }
    });
  }

  /**
   * In one transaction under the detect lock: `detect` reads and writes on the session and
   * returns the changes it found; only when there are some is the publish lock taken (after
   * the detect lock, never before: a POST holds only the publish lock) and they are stored.
   * After the commit, `broadcast` runs on the stored events, the publish lock still held, so
   * they go out in id order like any publish. Resolves with `broadcast`'s result, or undefined
   * when nothing was found; a failure before the commit rolls everything back.
   */
  storeDetected<T>(
    detect: (session: SqlSession) => Promise<NewNameEvent[]>,
    broadcast: (stored: StoredOutcome[]) => Promise<T>,
  ): Promise<T | undefined> {
    return this.withSession(async (session, discard) => {
      const sql: SqlSession = {
        query: async <R>(text: string, parameters: unknown[]) =>
          (await storage(() => session.query(text, parameters))).rows as R[],
      };
      let locked = false;
      try {
        let stored: StoredOutcome[] = [];
        await storage(() => session.query('BEGIN'));
        try {
          await storage(() => session.query('SELECT pg_advisory_xact_lock($1)', [DETECT_LOCK_KEY]));
          const changes = await detect(sql);
          if (changes.length > 0) {
            locked = true;
            await storage(() => session.query('SELECT pg_advisory_lock($1)', [PUBLISH_LOCK_KEY]));
            stored = await this.insertOrFindMany(changes, session);
          }
          await storage(() => session.query('COMMIT'));
        } catch (error) {
          await session.query('ROLLBACK').catch(discard);
          throw error;
        }
        return stored.length === 0 ? undefined : await broadcast(stored);
      } finally {
        if (locked) await this.unlockPublish(session, discard);
      }
    });
  }

  /**
   * Stores each event unless the same four fields are stored already, in one statement, new
   * ids following the order of `events`; returns every stored event, in that order, with
   * `created` telling new from repeat. Runs on `session`, which holds the publish lock.
   */
  async insertOrFindMany(
    events: readonly NewNameEvent[],
    session: Session,
  ): Promise<StoredOutcome[]> {
    const columns = [
      events.map((e) => e.userId),
      events.map((e) => e.type),
      events.map((e) => e.name),
      events.map((e) => e.changedAt.toISOString()),
    ];
    const { rows: inserted } = await storage(() =>
      session.query<StoredNameEvent>(
        `INSERT INTO name_change_events (user_id, type, name, changed_at)
         SELECT user_id, type, name, changed_at
           FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])
                WITH ORDINALITY AS e(user_id, type, name, changed_at, n)
          ORDER BY n
         ON CONFLICT ON CONSTRAINT name_change_events_identity_key DO NOTHING
         RETURNING ${STORED_COLUMNS}`,
        columns,
      ),
    );
    const stored = new Map(inserted.map((row) => [keyOf(row), row]));
    const repeats = new Set(events.map(keyOf).filter((key) => !stored.has(key)));
    if (repeats.size > 0) {
      const { rows: existing } = await storage(() =>
        session.query<StoredNameEvent>(
          `SELECT ${STORED_COLUMNS}
             FROM name_change_events
            WHERE (user_id, type, name, changed_at) IN (
                  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]))`,
          columns,
        ),
      );
      for (const row of existing) stored.set(keyOf(row), row);
    }
    const firstSeen = new Set<string>();
    return events.map((event) => {
      const key = keyOf(event);
      const row = stored.get(key)!;
      // The first input of an inserted row created it; a later identical input is a repeat.
      const created = !repeats.has(key) && !firstSeen.has(key);
      firstSeen.add(key);
      return {
        event: {
          id: row.id,
          userId: event.userId,
          type: event.type,
          name: event.name,
          changedAt: row.changedAt,
        },
        created,
      };
    });
  }

  /**
   * The newest stored id whose broadcast is done: the statement also waits for the publish
   * lock (shared), so a publish that stored an event this statement sees has been
   * acknowledged by the broker when it returns. ('0' when nothing is stored.)
   */
  async latestPublishedId(): Promise<string> {
    const [row] = await this.run<{ id: string | null }>({
      text: `SELECT (SELECT max(id)::text FROM name_change_events) AS id,
                    (SELECT pg_advisory_xact_lock_shared($1)) IS NULL AS locked`,
      values: [PUBLISH_LOCK_KEY],
    });
    return row?.id ?? '0';
  }

  /**
   * The events stored after `afterId` (optionally one user's), oldest first: at most the
   * newest `limit` of them.
   */
  async findAfterId(
    afterId: string,
    { userId, limit }: { userId?: string; limit: number },
  ): Promise<StoredNameEvent[]> {
    // Qualified: a bare `id` in ORDER BY names the output column, the text one (10 < 9).
    const rows = await this.run<StoredNameEvent>({
      text: `SELECT ${STORED_COLUMNS}
               FROM name_change_events
              WHERE id > $1 AND ($2::text IS NULL OR user_id = $2)
              ORDER BY name_change_events.id DESC
              LIMIT $3`,
      values: [afterId, userId ?? null, limit],
    });
    return rows.reverse();
  }

  /**
   * Runs `work` on a pooled session of its own. `discard()` marks the session as unfit for
   * reuse (it may still hold a lock, or be mid-transaction): it is closed, not pooled again.
   */
  private async withSession<T>(
    work: (session: Session, discard: () => void) => Promise<T>,
  ): Promise<T> {
    const runner = this.dataSource.createQueryRunner();
    let fit = true;
    try {
      const session = await storage(() => runner.connect() as Promise<Session>);
      try {
        return await work(session, () => (fit = false));
      } catch (error) {
        // A statement that failed may yet run on the server (a lock granted after a timeout).
        if (error instanceof StorageUnavailableError) fit = false;
        throw error;
      } finally {
        if (!fit) await (session as Session & { end(): Promise<void> }).end().catch(() => {});
      }
    } finally {
      await runner.release();
    }
  }

  private async unlockPublish(session: Session, discard: () => void): Promise<void> {
    await session.query('SELECT pg_advisory_unlock($1)', [PUBLISH_LOCK_KEY]).catch(discard);
  }

  /** One statement on a pooled connection. */
  private async run<T extends QueryResultRow>(query: QueryConfig): Promise<T[]> {
    const runner = this.dataSource.createQueryRunner();
    try {
      const client = await storage(() => runner.connect() as Promise<ClientBase>);
      return (await storage(() => client.query<T>(query))).rows;
    } finally {
      await runner.release();
    }
  }
}

/** Runs a statement; any failure of it means the database is unavailable. */
export async function storage<T>(statement: () => Promise<T>): Promise<T> {
  try {
    return await statement();
  } catch (error) {
    if (error instanceof StorageUnavailableError) throw error;
    throw new StorageUnavailableError((error as Error).message);
  }
}
