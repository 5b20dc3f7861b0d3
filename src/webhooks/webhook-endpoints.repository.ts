import { Injectable } from '@nestjs/common';
import { SqlService } from '../database/sql.service.js';
import type { NameType } from '../name-events/name-event.types.js';
import { matchingEvents } from './webhook-deliveries.repository.js';
import type { WebhookFormat } from './webhook-endpoint.entity.js';

/** An endpoint as registered (its secret aside). */
export interface EndpointRow {
  id: string;
  url: string;
  format: WebhookFormat;
  userId: string | null;
  type: NameType | null;
  description: string | null;
  createdAt: Date;
}

/** An endpoint and how its deliveries stand. */
export interface EndpointStatusRow extends EndpointRow {
  lastDeliveredEventId: string | null;
  pending: number;
  failingSince: Date | null;
}

export type NewEndpoint = Omit<EndpointRow, 'id' | 'createdAt'> & { secret: string | null };

const ENDPOINT_COLUMNS = `w.id::text AS id, w.url, w.format, w.user_id AS "userId", w.type,
  w.description, w.created_at AS "createdAt"`;

/**
 * An endpoint's pending events: the matching events stored after those delivered to it
 * (erased events are not there to count).
 */
const PENDING = `(SELECT count(*) FROM (${matchingEvents('w.delivered_through')}) e)::int`;

const STATUS_COLUMNS = `${ENDPOINT_COLUMNS}, w.last_delivered_event_id::text AS "lastDeliveredEventId",
  ${PENDING} AS pending, w.failing_since AS "failingSince"`;

/** Every query on webhook_endpoints. Statements join the caller's unit of work. */
@Injectable()
export class WebhookEndpointsRepository {
  constructor(private readonly sql: SqlService) {}

  /**
   * Registers an endpoint: it gets the events stored after the newest one stored now (those
   * stored later commit after this statement, under the publish lock, with greater ids).
   */
  async create(endpoint: NewEndpoint): Promise<EndpointRow> {
    const [row] = await this.sql.query<EndpointRow>(
      `INSERT INTO webhook_endpoints AS w (url, format, user_id, type, description, secret, delivered_through)
       SELECT $1, $2, $3, $4, $5, $6, coalesce(max(id), 0) FROM name_change_events
       RETURNING ${ENDPOINT_COLUMNS}`,
      [
        endpoint.url,
        endpoint.format,
        endpoint.userId,
        endpoint.type,
        endpoint.description,
        endpoint.secret,
      ],
    );
    return row;
  }

  findAll(): Promise<EndpointStatusRow[]> {
    return this.sql.query<EndpointStatusRow>(
      `SELECT ${STATUS_COLUMNS} FROM webhook_endpoints w ORDER BY w.id`,
    );
  }

  async find(id: string): Promise<EndpointStatusRow | undefined> {
    const [row] = await this.sql.query<EndpointStatusRow>(
      `SELECT ${STATUS_COLUMNS} FROM webhook_endpoints w WHERE w.id = $1`,
      [id],
    );
    return row;
  }

  /** Deletes the endpoint; returns whether there was one. */
  async delete(id: string): Promise<boolean> {
    const { rowCount } = await this.sql.execute('DELETE FROM webhook_endpoints WHERE id = $1', [
      id,
    ]);
    return rowCount > 0;
  }

  /** The endpoints deliveries go to (not those that answered 410). */
  async findActiveIds(): Promise<string[]> {
    const rows = await this.sql.query<{ id: string }>({
      name: 'webhook-active-endpoints',
      text: 'SELECT id::text AS id FROM webhook_endpoints WHERE gone_at IS NULL ORDER BY id',
    });
    return rows.map((row) => row.id);
  }

  /** Each endpoint's pending events, for the metrics. */
  async pendingCounts(): Promise<{ id: string; pending: number }[]> {
    return this.sql.query<{ id: string; pending: number }>({
      name: 'webhook-pending-counts',
      text: `SELECT w.id::text AS id, ${PENDING} AS pending FROM webhook_endpoints w`,
    });
  }
}
