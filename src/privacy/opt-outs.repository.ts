import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import { textArray } from '../database/index.js';
import { RecordingGuardsService, type RecordingGuard } from '../name-events/index.js';

/**
 * Every query on user_opt_outs. Statements join the caller's unit of work.
 *
 * Users who opted out are not recorded: registered with the name-event domain as a
 * RecordingGuard, which it asks under the publish lock (a POST) or the user's partition lock
 * (the detector's comparisons). An opt-out is recorded under both locks (PrivacyService), so
 * the answer holds until the asker lets go of its lock.
 */
@Injectable()
export class OptOutsRepository implements RecordingGuard, OnModuleInit {
  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly guards: RecordingGuardsService,
  ) {}

  onModuleInit(): void {
    this.guards.register(this);
  }

  /** Records the opt-out (again: nothing changes). */
  async add(userId: string): Promise<void> {
    await this.txHost.tx.query(
      'INSERT INTO user_opt_outs (user_id) VALUES ($1) ON CONFLICT (user_id) DO NOTHING',
      [userId],
    );
  }

  /** Lifts the opt-out; returns whether there was one. */
  async remove(userId: string): Promise<boolean> {
    const [, deleted] = await this.txHost.tx.query<[unknown, number]>(
      'DELETE FROM user_opt_outs WHERE user_id = $1',
      [userId],
    );
    return deleted > 0;
  }

  /** Which of `userIds` have opted out. */
  async refusedAmong(userIds: readonly string[]): Promise<Set<string>> {
    const rows = await this.txHost.tx.query<{ userId: string }[]>(
      'SELECT user_id AS "userId" FROM user_opt_outs WHERE user_id = ANY($1::text[])',
      [textArray(userIds)],
    );
    return new Set(rows.map((row) => row.userId));
  }
}
