import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { userPartitionOf } from '../name-events/index.js';
import type { MemberObservation } from './member-observation.js';

/**
 * How far each shard's live updates are stored (ShardProgress), kept in the transaction that
 * stores them, so that a resumed session's replay skips what is stored already, to the
 * update, however the previous holder ended. Comparing a replayed update again is not
 * harmless: with a name changed twice (A → B → C) and both stored, the replayed "B" would
 * record C as a previous name, and the replayed "C" record B a second time.
 */
@Injectable()
export class ShardProgressRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /**
   * The replayed live updates among `observations` that are stored already: undefined when
   * none is replayed (no statement). Joins the caller's unit of work, under the partition
   * locks of the observations' users.
   */
  async storedAmong(
    observations: readonly MemberObservation[],
  ): Promise<Set<MemberObservation> | undefined> {
    const replayed = observations.filter((o) => o.position?.replayed);
    if (replayed.length === 0) return undefined;
    const shards = [...new Set(replayed.map((o) => o.position!.shardId))];
    const rows = await this.txHost.tx.query<ProgressRow[]>(
      `SELECT shard_id AS "shardId", user_partition AS "userPartition",
              session_id AS "sessionId", sequence
         FROM detector_shard_progress WHERE shard_id = ANY($1::int[])`,
      [shards],
    );
    const stored = new Map(rows.map((row) => [keyOf(row.shardId, row.userPartition), row]));
    return new Set(
      replayed.filter(({ userId, position }) => {
        const row = stored.get(keyOf(position!.shardId, userPartitionOf(userId)));
        return row?.sessionId === position!.sessionId && position!.sequence <= Number(row.sequence);
      }),
    );
  }

  /**
   * Moves each shard's progress forward to the last live update of `observations` (stored in
   * this unit of work), partition by partition. Never back within a session: an instance that
   * lost a shard's lease may still be storing older updates.
   */
  async save(observations: readonly MemberObservation[]): Promise<void> {
    const last = new Map<string, ProgressRow>();
    for (const { userId, position } of observations) {
      if (!position) continue;
      const userPartition = userPartitionOf(userId);
      const { shardId, sessionId, sequence } = position;
      last.set(keyOf(shardId, userPartition), { shardId, userPartition, sessionId, sequence });
    }
    if (last.size === 0) return;
    const rows = [...last.values()];
    await this.txHost.tx.query(
      `INSERT INTO detector_shard_progress AS p (shard_id, user_partition, session_id, sequence)
       SELECT * FROM unnest($1::int[], $2::smallint[], $3::text[], $4::bigint[])
           ON CONFLICT (shard_id, user_partition) DO UPDATE
              SET session_id = excluded.session_id, sequence = excluded.sequence
            WHERE p.session_id <> excluded.session_id OR p.sequence < excluded.sequence`,
      [
        rows.map((r) => r.shardId),
        rows.map((r) => r.userPartition),
        rows.map((r) => r.sessionId),
        rows.map((r) => r.sequence),
      ],
    );
  }
}

interface ProgressRow {
  shardId: number;
  userPartition: number;
  sessionId: string;
  sequence: number | string;
}

function keyOf(shardId: number, userPartition: number): string {
  return `${shardId}:${userPartition}`;
}
