import { Column, Entity, PrimaryColumn } from 'typeorm';

const PRIMARY_KEY = 'PK_detector_shard_progress';

/**
 * How far a shard's live updates of one user partition are stored: the gateway sequence of
 * the last one, in its session, written in the transaction that stores what it changed. A
 * user's live updates are stored in the order they came (one lane per partition), so every
 * update of that shard, session and partition up to `sequence` is stored. Discord replays a
 * resumed session from the sequence its holder last saved, which lags what it stored: a
 * replayed update at or below this is not compared again (ShardProgressRepository).
 */
@Entity({ name: 'detector_shard_progress' })
export class ShardProgress {
  @PrimaryColumn({ name: 'shard_id', type: 'integer', primaryKeyConstraintName: PRIMARY_KEY })
  shardId: number;

  /** The users' partition (`userPartitionOf`). */
  @PrimaryColumn({
    name: 'user_partition',
    type: 'smallint',
    primaryKeyConstraintName: PRIMARY_KEY,
  })
  userPartition: number;

  @Column({ name: 'session_id', type: 'text' })
  sessionId: string;

  @Column({ type: 'bigint' })
  sequence: string;
}
