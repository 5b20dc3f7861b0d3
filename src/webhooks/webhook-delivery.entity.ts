import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { NameChangeEvent } from '../name-events/name-change-event.entity.js';
import { WebhookEndpoint } from './webhook-endpoint.entity.js';

/**
 * An event not yet delivered to an endpoint. Deleted on the endpoint's 2xx; with the
 * endpoint; and with the event (an erasure, an opt-out, retention), so that an erased event
 * is never sent.
 */
@Entity({ name: 'webhook_deliveries' })
@Index('webhook_deliveries_event_idx', ['eventId'])
export class WebhookDelivery {
  @PrimaryColumn({
    name: 'endpoint_id',
    type: 'bigint',
    primaryKeyConstraintName: 'PK_webhook_deliveries',
  })
  endpointId: string;

  @PrimaryColumn({
    name: 'event_id',
    type: 'bigint',
    primaryKeyConstraintName: 'PK_webhook_deliveries',
  })
  eventId: string;

  @ManyToOne(() => WebhookEndpoint, { onDelete: 'CASCADE' })
  @JoinColumn({
    name: 'endpoint_id',
    foreignKeyConstraintName: 'FK_webhook_deliveries_endpoint',
  })
  endpoint?: WebhookEndpoint;

  @ManyToOne(() => NameChangeEvent, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'event_id', foreignKeyConstraintName: 'FK_webhook_deliveries_event' })
  event?: NameChangeEvent;
}

/**
 * The id of the last event the webhooks consumer queued deliveries for (one row): `pending`
 * also counts the matching events after it, stored and not queued yet.
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
