import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** A durable consumer of the event log, and the id of the last event it handled. */
@Entity({ name: 'name_event_consumers' })
export class NameEventConsumerPosition {
  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: 'PK_name_event_consumers' })
  name: string;

  /** pg returns int8 as a string. */
  @Column({ type: 'bigint' })
  position: string;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
