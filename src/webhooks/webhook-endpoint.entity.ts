import { Check, Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { NameType } from '../name-events/index.js';

export const WEBHOOK_FORMATS = ['standard', 'discord'] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];

/**
 * An endpoint an operator registered: where events go, in which format, filtered how, and
 * how its deliveries stand. It gets the events stored after it was created (from
 * `deliveredThrough` as it starts).
 */
@Entity({ name: 'webhook_endpoints' })
@Check('webhook_endpoints_format_check', `"format" IN ('standard', 'discord')`)
@Check('webhook_endpoints_type_check', `"type" IN ('username', 'displayname')`)
export class WebhookEndpoint {
  /** pg returns int8 as a string, which is what the routes answer. */
  @PrimaryGeneratedColumn('identity', {
    type: 'bigint',
    generatedIdentity: 'ALWAYS',
    primaryKeyConstraintName: 'PK_webhook_endpoints',
  })
  id: string;

  @Column({ type: 'text' })
  url: string;

  @Column({ type: 'text' })
  format: WebhookFormat;

  @Column({ name: 'user_id', type: 'text', nullable: true })
  userId: string | null;

  @Column({ type: 'text', nullable: true })
  type: NameType | null;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  /** The `standard` format's signing key (`whsec_…`); null for `discord`. */
  @Column({ type: 'text', nullable: true })
  secret: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /**
   * Every matching event up to this id was delivered (or erased): its sender reads after it.
   * Starts at the newest event id when the endpoint was created.
   */
  @Column({ name: 'delivered_through', type: 'bigint' })
  deliveredThrough: string;

  @Column({ name: 'last_delivered_event_id', type: 'bigint', nullable: true })
  lastDeliveredEventId: string | null;

  @Column({ name: 'failing_since', type: 'timestamptz', nullable: true })
  failingSince: Date | null;

  /** When it answered 410 Gone: nothing more is sent to it. */
  @Column({ name: 'gone_at', type: 'timestamptz', nullable: true })
  goneAt: Date | null;
}
