import { Check, Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * The id of the last event the webhooks consumer has read (one row): every event up to it is
 * committed, so the senders read up to it and no further.
 */
@Entity({ name: 'webhook_queue_position' })
@Check('webhook_queue_position_one_row', `"id"`)
export class WebhookQueuePosition {
  @PrimaryColumn({
    type: 'boolean',
    default: true,
    primaryKeyConstraintName: 'PK_webhook_queue_position',
  })
  id: boolean;

  @Column({ name: 'event_id', type: 'bigint' })
  eventId: string;
}
