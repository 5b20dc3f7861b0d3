import { Injectable } from '@nestjs/common';
import { SqlService } from '../database/sql.service.js';
import type { StoredNameEvent } from '../name-events/name-event.types.js';
import type { WebhookFormat } from './webhook-endpoint.entity.js';

/** What a sender needs for its next attempt. */
export interface NextDelivery {
  url: string;
  format: WebhookFormat;
  secret: string | null;
  /** It answered 410 Gone: nothing more is sent to it. */
  gone: boolean;
  /** The oldest event queued for it, if any. */
  event?: StoredNameEvent;
}

interface NextRow extends Omit<NextDelivery, 'event'> {
  eventId: string | null;
  userId: string;
  type: StoredNameEvent['type'];
  name: string;
  changedAt: Date;
}

/** Every query on webhook_deliveries and the queue's position. */
@Injectable()
export class WebhookDeliveriesRepository {
  constructor(private readonly sql: SqlService) {}

  /**
   * Queues `events` for every endpoint whose filters they match and that was created before
   * they were stored, and moves the queue's position past them, in one statement. Events
   * erased since they were read are left out.
   */
  async enqueue(events: readonly StoredNameEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.sql.query({
      name: 'webhook-enqueue',
      text: `WITH queued AS (
               INSERT INTO webhook_deliveries (endpoint_id, event_id)
               SELECT w.id, e.id
                 FROM unnest($1::bigint[], $2::text[], $3::text[]) AS e(id, user_id, type)
                 JOIN webhook_endpoints w
                   ON e.id > w.start_after
                  AND (w.user_id IS NULL OR w.user_id = e.user_id)
                  AND (w.type IS NULL OR w.type = e.type)
                WHERE EXISTS (SELECT 1 FROM name_change_events n WHERE n.id = e.id)
               ON CONFLICT DO NOTHING)
             INSERT INTO webhook_queue_position (id, event_id) VALUES (true, $4)
             ON CONFLICT (id) DO UPDATE SET event_id = greatest(webhook_queue_position.event_id, excluded.event_id)`,
      values: [
        events.map((e) => e.id),
        events.map((e) => e.userId),
        events.map((e) => e.type),
        events[events.length - 1].id,
      ],
    });
  }

  /** The endpoint and its oldest queued event; undefined when the endpoint is deleted. */
  async next(endpointId: string): Promise<NextDelivery | undefined> {
    const [row] = await this.sql.query<NextRow>({
      name: 'webhook-next-delivery',
      text: `SELECT w.url, w.format, w.secret, w.gone_at IS NOT NULL AS gone,
                    e.id::text AS "eventId", e.user_id AS "userId", e.type, e.name,
                    e.changed_at AS "changedAt"
               FROM webhook_endpoints w
               LEFT JOIN LATERAL (SELECT d.event_id FROM webhook_deliveries d
                                   WHERE d.endpoint_id = w.id
                                   ORDER BY d.event_id LIMIT 1) d ON true
               LEFT JOIN name_change_events e ON e.id = d.event_id
              WHERE w.id = $1`,
      values: [endpointId],
    });
    if (!row) return undefined;
    const { url, format, secret, gone } = row;
    const event =
      row.eventId === null
        ? undefined
        : {
            id: row.eventId,
            userId: row.userId,
            type: row.type,
            name: row.name,
            changedAt: row.changedAt.toISOString(),
          };
    return { url, format, secret, gone, event };
  }

  /** The endpoint got a 2xx for the event: dequeued, and the endpoint no longer failing. */
  async delivered(endpointId: string, eventId: string): Promise<void> {
    await this.sql.query({
      name: 'webhook-delivered',
      text: `WITH done AS (DELETE FROM webhook_deliveries WHERE endpoint_id = $1 AND event_id = $2)
             UPDATE webhook_endpoints SET last_delivered_event_id = $2, failing_since = NULL
              WHERE id = $1`,
      values: [endpointId, eventId],
    });
  }

  /** An attempt at `at` got no 2xx; with `gone` (a 410), nothing more is sent. */
  async failed(endpointId: string, at: Date, gone: boolean): Promise<void> {
    await this.sql.query({
      name: 'webhook-failed',
      text: `UPDATE webhook_endpoints
                SET failing_since = coalesce(failing_since, $2),
                    gone_at = CASE WHEN $3 THEN $2 ELSE gone_at END
              WHERE id = $1`,
      values: [endpointId, at, gone],
    });
  }
}
