import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { ClientBase, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import { DataSource } from 'typeorm';
import {
  NameChangeEventRepository,
  storage,
  type Session,
} from './name-change-event.repository.js';
import type { SqlSession } from './name-event.types.js';

/**
 * Every query of erasure, opt-out and retention, on name_change_events and user_opt_outs.
 * Whatever deletes events does it under the publish lock, so a publish (insert, then
 * broadcast) is either wholly before a deletion or wholly after it: an event is never
 * broadcast after it was erased, and never stored for a user after they opted out.
 */
@Injectable()
export class PrivacyRepository {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly events: NameChangeEventRepository,
  ) {}

  /**
   * Deletes every event of the user, and the detector's last known names of them (so nothing
   * of the user is left); returns how many events. Under both locks: a publish or a comparison
   * of the detector is wholly before (erased) or wholly after.
   */
  eraseUser(userId: string): Promise<number> {
    return this.events.underAllLocks((session) => this.deleteUser(userId, session));
  }

  /**
   * Records the opt-out and deletes every event (and known name) of the user, together;
   * returns how many events. Opting out again only deletes (nothing is left to delete).
   */
  optOut(userId: string): Promise<number> {
    return this.events.underAllLocks(async (session) => {
      await storage(() =>
        session.query(
          'INSERT INTO user_opt_outs (user_id) VALUES ($1) ON CONFLICT (user_id) DO NOTHING',
          [userId],
        ),
      );
      return this.deleteUser(userId, session);
    });
  }

  /**
   * Lifts the opt-out; returns whether there was one. Needs no lock: a publish batch that
   * still saw the opt-out refused the user, one that no longer sees it records them, and
   * either is a correct order.
   */
  async optIn(userId: string): Promise<boolean> {
    const { rowCount } = await this.run({
      text: 'DELETE FROM user_opt_outs WHERE user_id = $1',
      values: [userId],
    });
    return (rowCount ?? 0) > 0;
  }

  async isOptedOut(userId: string): Promise<boolean> {
    const { rows } = await this.run({
      name: 'is-opted-out',
      text: 'SELECT 1 FROM user_opt_outs WHERE user_id = $1',
      values: [userId],
    });
    return rows.length > 0;
  }

  /**
   * Which of `userIds` have opted out. Runs on `session`, which holds the publish lock: an
   * opt-out is committed under that lock, so what this answers holds until the lock is
   * released.
   */
  async findOptedOut(userIds: readonly string[], session: Session): Promise<Set<string>> {
    const { rows } = await storage(() =>
      session.query<{ userId: string }>({
        name: 'find-opted-out',
        text: 'SELECT user_id AS "userId" FROM user_opt_outs WHERE user_id = ANY($1::text[])',
        values: [[...new Set(userIds)]],
      }),
    );
    return new Set(rows.map((row) => row.userId));
  }

  /**
   * Deletes at most `limit` events that changed before `cutoff`, oldest first, in one short
   * statement under the publish lock; returns how many. Call again until it returns less than
   * `limit`: publishes go ahead between the calls.
   */
  deleteChangedBefore(cutoff: Date, limit: number): Promise<number> {
    return this.events.underPublishLock(async (session) => {
      const { rowCount } = await storage(() =>
        session.query({
          name: 'delete-changed-before',
          text: `DELETE FROM name_change_events
                  WHERE id IN (SELECT id FROM name_change_events
                                WHERE changed_at < $1
                                ORDER BY changed_at
                                LIMIT $2)`,
          values: [cutoff, limit],
        }),
      );
      return rowCount ?? 0;
    });
  }

  /**
   * Which of `userIds` have opted out, on the detector's session: it holds the detect lock,
   * which an opt-out also takes, so the answer holds for the whole comparison.
   */
  async optedOutAmong(session: SqlSession, userIds: readonly string[]): Promise<Set<string>> {
    if (userIds.length === 0) return new Set();
    const rows = await session.query<{ userId: string }>(
      'SELECT user_id AS "userId" FROM user_opt_outs WHERE user_id = ANY($1::text[])',
      [[...new Set(userIds)]],
    );
    return new Set(rows.map((row) => row.userId));
  }

  private async deleteUser(userId: string, session: Session): Promise<number> {
    await storage(() => session.query('DELETE FROM known_names WHERE user_id = $1', [userId]));
    const { rowCount } = await storage(() =>
      session.query('DELETE FROM name_change_events WHERE user_id = $1', [userId]),
    );
    return rowCount ?? 0;
  }

  /** One statement on a pooled connection. */
  private async run<T extends QueryResultRow>(query: QueryConfig): Promise<QueryResult<T>> {
    const runner = this.dataSource.createQueryRunner();
    try {
      const client = await storage(() => runner.connect() as Promise<ClientBase>);
      return await storage(() => client.query<T>(query));
    } finally {
      await runner.release();
    }
  }
}
