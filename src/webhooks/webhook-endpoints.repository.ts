import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { WebhookEndpoint } from './webhook-endpoint.entity.js';

// The rows are the entity's columns, as the queries below select them.

/** An endpoint as registered (its secret aside). */
export type EndpointRow = Pick<
  WebhookEndpoint,
  'id' | 'url' | 'format' | 'userId' | 'type' | 'description' | 'createdAt'
>;

/** An endpoint and how its deliveries stand (`pending` is counted in the event log). */
export type EndpointStatusRow = EndpointRow &
  Pick<WebhookEndpoint, 'lastDeliveredEventId' | 'deliveredThrough' | 'failingSince'>;

/** An endpoint as its sender needs it. */
export type SenderEndpoint = Pick<
  WebhookEndpoint,
  'url' | 'format' | 'secret' | 'userId' | 'type' | 'deliveredThrough'
>;

/** Where an endpoint is in the event log, as NameEventLogRepository.countAfter takes it. */
export function positionOf({ deliveredThrough, userId, type }: EndpointStatusRow) {
  return { afterId: deliveredThrough, userId, type };
}

export type NewEndpoint = Pick<
  WebhookEndpoint,
  'url' | 'format' | 'userId' | 'type' | 'description' | 'secret' | 'deliveredThrough'
>;

const ENDPOINT_COLUMNS = `w.id::text AS id, w.url, w.format, w.user_id AS "userId", w.type,
  w.description, w.created_at AS "createdAt"`;

const STATUS_COLUMNS = `${ENDPOINT_COLUMNS}, w.last_delivered_event_id::text AS "lastDeliveredEventId",
  w.delivered_through::text AS "deliveredThrough", w.failing_since AS "failingSince"`;

/**
 * Every query on webhook_endpoints: registration, and how far each endpoint's deliveries are.
 * Records commute (`greatest`): one made late never moves an endpoint back.
 */
@Injectable()
export class WebhookEndpointsRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  async create(endpoint: NewEndpoint): Promise<EndpointRow> {
    const { url, format, userId, type, description, secret, deliveredThrough } = endpoint;
    const [row] = await this.txHost.tx.query<EndpointRow[]>(
      `INSERT INTO webhook_endpoints AS w (url, format, user_id, type, description, secret, delivered_through)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       RETURNING ${ENDPOINT_COLUMNS}`,
      [url, format, userId, type, description, secret, deliveredThrough],
    );
    return row;
  }

  findAll(): Promise<EndpointStatusRow[]> {
    return this.txHost.tx.query<EndpointStatusRow[]>(
      `SELECT ${STATUS_COLUMNS} FROM webhook_endpoints w ORDER BY w.id`,
    );
  }

  async find(id: string): Promise<EndpointStatusRow | undefined> {
    const [row] = await this.txHost.tx.query<EndpointStatusRow[]>(
      `SELECT ${STATUS_COLUMNS} FROM webhook_endpoints w WHERE w.id = $1`,
      [id],
    );
    return row;
  }

  /** Deletes the endpoint; returns whether there was one. */
  async delete(id: string): Promise<boolean> {
    const [, rowCount] = await this.txHost.tx.query<[unknown, number]>(
      'DELETE FROM webhook_endpoints WHERE id = $1',
      [id],
    );
    return rowCount > 0;
  }

  /** The endpoints deliveries go to (not those that answered 410). */
  async findActiveIds(): Promise<string[]> {
    const rows = await this.txHost.tx.query<{ id: string }[]>(
      'SELECT id::text AS id FROM webhook_endpoints WHERE gone_at IS NULL ORDER BY id',
    );
    return rows.map((row) => row.id);
  }

  /**
   * The endpoint as its sender reads it; undefined when it is deleted, or gone (it answered
   * 410 Gone: nothing more is sent to it).
   */
  async findForSender(id: string): Promise<SenderEndpoint | undefined> {
    const [row] = await this.txHost.tx.query<SenderEndpoint[]>(
      `SELECT url, format, secret, user_id AS "userId", type,
                    delivered_through::text AS "deliveredThrough"
               FROM webhook_endpoints WHERE id = $1 AND gone_at IS NULL`,
      [id],
    );
    return row;
  }

  /**
   * Records that `eventId` got a 2xx (null: none, the sender only read past events not the
   * endpoint's) and every matching event up to `through` is delivered; a 2xx clears
   * `failingSince`. Returns whether the endpoint is still there.
   */
  async delivered(id: string, eventId: string | null, through: string): Promise<boolean> {
    const [, rowCount] = await this.txHost.tx.query<[unknown, number]>(
      `UPDATE webhook_endpoints
                SET last_delivered_event_id = greatest(last_delivered_event_id, $2::bigint),
                    delivered_through = greatest(delivered_through, $3::bigint),
                    failing_since = CASE WHEN $2::bigint IS NULL THEN failing_since END
              WHERE id = $1`,
      [id, eventId, through],
    );
    return rowCount > 0;
  }

  /** Records that an attempt at `at` got no 2xx; with `gone` (a 410), nothing more is sent. */
  async failed(id: string, at: Date, gone: boolean): Promise<void> {
    await this.txHost.tx.query(
      `UPDATE webhook_endpoints
                SET failing_since = coalesce(failing_since, $2),
                    gone_at = CASE WHEN $3 THEN $2 ELSE gone_at END
              WHERE id = $1`,
      [id, at, gone],
    );
  }
}
