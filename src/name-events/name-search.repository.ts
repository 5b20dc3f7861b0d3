import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { StoredPosition } from '../common/opaque-cursor.js';
import type { NameType } from './name-event.types.js';
import { UTC_ISO, UTC_ISO_MICROS } from './name-event-log.repository.js';

/**
 * The indexed form of a name (see the search module's migration, which built the index): NFC, then the database's Unicode
 * lower case. The query's name goes through the same expression in Postgres, never through
 * JavaScript's `toLowerCase`, which lowers a few letters otherwise ('İ').
 */
const SEARCH_KEY = 'lower(normalize(name, NFC))';
const QUERY_KEY = 'lower(normalize($1::text, NFC))';
/** A LIKE pattern that matches the query's key as a prefix, its own `\`, `%` and `_` taken literally. */
const QUERY_PREFIX = `replace(replace(replace(${QUERY_KEY}, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%'`;

/** A match as the answer gives it, and its place in the search's order (`at`, `id`). */
const MATCH_COLUMNS = `user_id AS "userId", type, name, ${UTC_ISO} AS "changedAt", ${UTC_ISO_MICROS} AS at, id::text AS id`;

/** Before every stored event. */
export const SEARCH_START: StoredPosition = { at: '-infinity', id: '0' };

export interface SearchCriteria {
  name: string;
  type?: NameType;
  /** The whole name, or a prefix of it. */
  match: 'exact' | 'prefix';
  /** Only matches after this position. */
  after: StoredPosition;
  limit: number;
}

export interface SearchRow {
  userId: string;
  type: NameType;
  name: string;
  changedAt: string;
}

type MatchRow = SearchRow & StoredPosition;

export interface SearchPage {
  matches: SearchRow[];
  /** Where the last match is, when more remain after it. */
  next?: StoredPosition;
}

/**
 * Who had a name: the events table read by name, in (changedAt, id) order, through the
 * expression index the search module's migration built. Erased and opted-out users' rows are
 * deleted from the table, and with them their index entries: nothing here needs to know
 * about them.
 */
@Injectable()
export class NameSearchRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** The matches after a position, in (changedAt, id) order; one row past the limit tells whether more remain. */
  async findMatches(criteria: SearchCriteria): Promise<SearchPage> {
    const asked = { ...criteria, limit: criteria.limit + 1 };
    const rows =
      criteria.match === 'exact' ? await this.findExact(asked) : await this.findByPrefix(asked);
    const more = rows.length > criteria.limit;
    if (more) rows.pop();
    const last = rows[rows.length - 1];
    return {
      matches: rows.map(({ userId, type, name, changedAt }) => ({ userId, type, name, changedAt })),
      next: more ? { at: last.at, id: last.id } : undefined,
    };
  }

  /**
   * An exact search: one statement of its own (nothing of another request's search shares
   * it); the index gives its matches in answer order, from its cursor on.
   */
  private findExact(criteria: SearchCriteria): Promise<MatchRow[]> {
    // Qualified: a bare `id` in ORDER BY names the output column, the text one (10 < 9).
    return this.txHost.tx.query<MatchRow[]>(
      `SELECT ${MATCH_COLUMNS}
               FROM name_change_events
              WHERE ${SEARCH_KEY} = ${QUERY_KEY}
                AND (changed_at, id) > ($2::timestamptz, $3::bigint)
                AND ($4::text IS NULL OR type = $4::text)
              ORDER BY changed_at, name_change_events.id
              LIMIT $5`,
      [criteria.name, criteria.after.at, criteria.after.id, criteria.type ?? null, criteria.limit],
    );
  }

  /**
   * A prefix: planned with the values bound, so that Postgres turns the LIKE
   * pattern's literal prefix into a range of the index; the matches are gathered first
   * (MATERIALIZED), then sorted. Left to itself the planner may walk the whole table in
   * changed_at order instead, filtering on the name, when it overestimates how many names
   * share the prefix: a time that grows with the table, not the matches.
   */
  private findByPrefix(criteria: SearchCriteria): Promise<MatchRow[]> {
    const typed = criteria.type !== undefined;
    return this.txHost.tx.query<MatchRow[]>(
      `WITH matches AS MATERIALIZED (
               SELECT user_id, type, name, changed_at, id FROM name_change_events
                WHERE ${SEARCH_KEY} LIKE ${QUERY_PREFIX}
                  AND (changed_at, id) > ($2::timestamptz, $3::bigint)
                  ${typed ? 'AND type = $5' : ''}
             )
             SELECT ${MATCH_COLUMNS}
               FROM matches
              ORDER BY matches.changed_at, matches.id
              LIMIT $4`,
      [
        criteria.name,
        criteria.after.at,
        criteria.after.id,
        criteria.limit,
        ...(typed ? [criteria.type] : []),
      ],
    );
  }
}
