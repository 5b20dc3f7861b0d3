import {
  Check,
  Column,
  CreateDateColumn,
  Entity,
  Index,
  PrimaryGeneratedColumn,
  Unique,
} from 'typeorm';
import type { NameType } from './name-event.types.js';

/**
 * One recorded name change: the name a user had before a change, and when it changed.
 * The same four fields are stored once (the unique key), which makes a publish idempotent.
 */
@Entity({ name: 'name_change_events' })
@Unique('name_change_events_identity_key', ['userId', 'type', 'name', 'changedAt'])
@Index('name_change_events_user_history_idx', ['userId', 'changedAt', 'id'])
@Index('name_change_events_changed_at_idx', ['changedAt'])
@Check('name_change_events_type_check', `"type" IN ('username', 'displayname')`)
export class NameChangeEvent {
  /** Monotonic; also the SSE event id. pg returns int8 as a string, which is what we send. */
  @PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS' })
  id: string;

  @Column({ name: 'user_id', type: 'text' })
  userId: string;

  @Column({ type: 'text' })
  type: NameType;

  @Column({ type: 'text' })
  name: string;

  @Column({ name: 'changed_at', type: 'timestamptz' })
  changedAt: Date;

  @CreateDateColumn({ name: 'stored_at', type: 'timestamptz' })
  storedAt: Date;
}
