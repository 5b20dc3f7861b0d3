import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { NameEntry } from './name-event.types.js';
import { UTC_ISO } from './name-change-event.repository.js';

// A stored time exactly, to the microsecond Postgres keeps: where a page of history ends.
const UTC_ISO_MICROS = `to_char(changed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

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

/** Users' histories: the reads of name_change_events by user, in (changedAt, id) order. */
@Injectable()
export class NameHistoryRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /**
   * The user's whole history (or its oldest `limit` entries), oldest first (ties in storage
   * order). One statement of its own per read, never shared with another request's. Sent
   * when asked, it sees every write committed before.
   */
  findHistory(userId: string, limit?: number): Promise<NameEntry[]> {
    return this.txHost.tx.query<NameEntry[]>(
      `SELECT type, name, ${UTC_ISO} AS "changedAt"
               FROM name_change_events
              WHERE user_id = $1
              ORDER BY changed_at, id
              LIMIT $2`,
      [userId, limit ?? null],
    );
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
