import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { STORED_COLUMNS } from '../name-event-log.repository.js';
import type { StoredNameEvent } from '../name-event.types.js';

/**
 * The event log as its consumers work through it: where each is (name_event_consumers: the
 * id of the last event it handled), its next batch, how far behind it is. Statements join the
 * caller's transaction.
 */
@Injectable()
export class ConsumerPositionsRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** The oldest `limit` events stored after `afterId`, oldest first: a consumer's next batch. */
  findOldestAfterId(afterId: string, limit: number): Promise<StoredNameEvent[]> {
    return this.txHost.tx.query<StoredNameEvent[]>(
      `SELECT ${STORED_COLUMNS}
               FROM name_change_events
              WHERE id > $1
              ORDER BY name_change_events.id
              LIMIT $2`,
      [afterId, limit],
    );
  }

  /**
   * The consumer's row, created where it starts when it is new: after the newest stored event
   * (`now`) or before the first (`start`).
   */
  async ensure(name: string, from: 'now' | 'start'): Promise<void> {
    await this.txHost.tx.query(
      `INSERT INTO name_event_consumers (name, position)
       SELECT $1, CASE WHEN $2 = 'now' THEN coalesce(max(id), 0) ELSE 0 END
         FROM name_change_events
       ON CONFLICT (name) DO NOTHING`,
      [name, from],
    );
  }

  /**
   * The consumer's position (its row created first if it is new), the row locked until the
   * transaction ends: a holder that lost its lease and is still running waits here, then finds
   * the position moved on.
   */
  async lock(name: string, from: 'now' | 'start'): Promise<string> {
    await this.ensure(name, from);
    const [row] = await this.txHost.tx.query<{ position: string }[]>(
      'SELECT position::text AS position FROM name_event_consumers WHERE name = $1 FOR UPDATE',
      [name],
    );
    return row.position;
  }

  /**
   * Moves the consumer's position from `from` to `to`; throws when it is
   * no longer at `from` (another instance moved it: this one lost the lease). Waits for a
   * transaction that holds the row, then looks again.
   */
  async move(name: string, from: string, to: string): Promise<void> {
    const [, rowCount] = await this.txHost.tx.query<[unknown, number]>(
      `UPDATE name_event_consumers SET position = $3, updated_at = now()
              WHERE name = $1 AND position = $2`,
      [name, from, to],
    );
    if (rowCount !== 1) {
      throw new Error(`Consumer ${name}: its position was moved by another instance`);
    }
  }

  /**
   * How far behind the consumer is: events stored after its position (counted up to `cap`),
   * and the age of the oldest of them in seconds (0 when there is none).
   */
  async lag(name: string, cap: number): Promise<{ events: number; seconds: number }> {
    const [row] = await this.txHost.tx.query<{ events: number; seconds: number }[]>(
      `SELECT (SELECT count(*)::int FROM (SELECT 1 FROM name_change_events e
                                                 WHERE e.id > c.position LIMIT $2) behind) AS events,
                    coalesce(extract(epoch FROM now() - (SELECT stored_at FROM name_change_events e
                                                          WHERE e.id > c.position
                                                          ORDER BY e.id LIMIT 1)), 0)::float AS seconds
               FROM name_event_consumers c WHERE c.name = $1`,
      [name, cap],
    );
    return row ?? { events: 0, seconds: 0 };
  }
}
