import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import DataLoader from 'dataloader';
import type { StoredPosition } from '../common/opaque-cursor.js';
import type { NameEntry } from './name-event.types.js';
import { UTC_ISO, UTC_ISO_MICROS } from './name-event-log.repository.js';

/** Before every entry, and after every entry. */
export const HISTORY_START: StoredPosition = { at: '-infinity', id: '0' };
export const HISTORY_END: StoredPosition = { at: 'infinity', id: '0' };

/** The entries strictly between two positions, at most `limit` of them. */
export interface HistoryRange {
  after: StoredPosition;
  before: StoredPosition;
  /** Default: all of them. */
  limit?: number;
  /** Take the `limit` entries closest to `before` rather than to `after`. */
  fromEnd: boolean;
}

export interface HistoryPage {
  /** Oldest first, whichever end the page was taken from. */
  entries: NameEntry[];
  /** Where the first and the last entry are (undefined when there are none). */
  first?: StoredPosition;
  last?: StoredPosition;
  /** Whether the range holds entries beyond the page, on the side away from its end. */
  more: boolean;
}

type HistoryRow = NameEntry & StoredPosition;

/** Users' histories: the reads of name_change_events by user, in (changedAt, id) order. */
@Injectable()
export class NameHistoryRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** Whole reads asked in the same turn, by the limit they ask for. */
  private readonly batches = new Map<number, DataLoader<string, NameEntry[]>>();

  /**
   * The user's whole history (or its oldest `limit` entries), oldest first (ties in storage
   * order). Sent when asked, it sees every write committed before.
   *
   * Whole reads with a limit asked in the same turn share one statement (up to 100 users):
   * one query per read held the history benchmark to a quarter of the raw-Node baseline
   * (BENCHMARKS.md). It is request-safe: what a read puts into the shared statement is only
   * its user id, which ParseUserIdPipe has checked (1-64 characters, no NUL, no unpaired
   * surrogate), so no read's input can make the statement fail for the others.
   */
  findHistory(userId: string, limit?: number): Promise<NameEntry[]> {
    if (limit !== undefined) return this.batchOf(limit).load(userId);
    return this.txHost.tx.query<NameEntry[]>(
      `SELECT type, name, ${UTC_ISO} AS "changedAt"
               FROM name_change_events
              WHERE user_id = $1
              ORDER BY changed_at, id`,
      [userId],
    );
  }

  private batchOf(limit: number): DataLoader<string, NameEntry[]> {
    let batch = this.batches.get(limit);
    if (!batch) {
      batch = new DataLoader((userIds) => this.findHistories(userIds, limit), {
        cache: false,
        maxBatchSize: 100,
        batchScheduleFn: (run) => setImmediate(run),
      });
      this.batches.set(limit, batch);
    }
    return batch;
  }

  /** The oldest `limit` entries of each user's history, in the order the ids were given. */
  private async findHistories(userIds: readonly string[], limit: number): Promise<NameEntry[][]> {
    const distinct = [...new Set(userIds)];
    const rows = await this.txHost.tx.query<(NameEntry & { userId: string })[]>(
      `SELECT u.user_id AS "userId", e.type, e.name, e."changedAt"
               FROM unnest($1::text[]) WITH ORDINALITY AS u(user_id, n)
               CROSS JOIN LATERAL (
                 SELECT type, name, ${UTC_ISO} AS "changedAt", changed_at, id
                   FROM name_change_events
                  WHERE user_id = u.user_id
                  ORDER BY changed_at, id
                  LIMIT $2
               ) AS e
              ORDER BY u.n, e.changed_at, e.id`,
      [distinct, limit],
    );
    const byUser = new Map<string, NameEntry[]>(distinct.map((userId) => [userId, []]));
    for (const { userId, type, name, changedAt } of rows) {
      byUser.get(userId)!.push({ type, name, changedAt });
    }
    return userIds.map((userId) => byUser.get(userId)!);
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
    const rows = await this.txHost.tx.query<HistoryRow[]>(
      `SELECT type, name, ${UTC_ISO} AS "changedAt", ${UTC_ISO_MICROS} AS at, id::text AS id
               FROM name_change_events
              WHERE user_id = $1
                AND (changed_at, id) > ($2::timestamptz, $3::bigint)
                AND (changed_at, id) < ($4::timestamptz, $5::bigint)
              ORDER BY ${order}
              LIMIT $6`,
      [
        userId,
        range.after.at,
        range.after.id,
        range.before.at,
        range.before.id,
        range.limit === undefined ? null : range.limit + 1,
      ],
    );
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
}
