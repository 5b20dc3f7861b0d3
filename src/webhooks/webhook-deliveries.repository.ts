import { Injectable } from '@nestjs/common';
import { SqlService } from '../database/sql.service.js';
import type { StoredNameEvent } from '../name-events/name-event.types.js';
import type { WebhookFormat } from './webhook-endpoint.entity.js';

/** An endpoint as its sender needs it. */
export interface SenderEndpoint {
  url: string;
  format: WebhookFormat;
  secret: string | null;
  /** It answered 410 Gone: nothing more is sent to it. */
  gone: boolean;
}

interface QueuedRow extends SenderEndpoint {
  eventId: string | null;
  userId: string;
  type: StoredNameEvent['type'];
  name: string;
  changedAt: Date;
}

/**
 * Dequeues the deliveries of endpoint `$1` up to event `$2`. Only those after the endpoint's
 * last delivered event are looked at: none is queued before it, and a range from the start
 * would walk every delivery deleted since the last vacuum, on each record.
 */
const DEQUEUE = `DELETE FROM webhook_deliveries d USING webhook_endpoints w
  WHERE w.id = $1 AND d.endpoint_id = $1
    AND d.event_id > coalesce(w.last_delivered_event_id, 0) AND d.event_id <= $2`;

/**
 * Records the 2xx of `$2` (unless null) and so of every event before it (an endpoint's events
 * are sent in id order): their deliveries dequeued, the endpoint no longer failing. Acks
 * commute: one recorded late never moves the position back.
 */
const ACK = `done AS (${DEQUEUE}),
  moved AS (UPDATE webhook_endpoints
               SET last_delivered_event_id = greatest(last_delivered_event_id, $2), failing_since = NULL
             WHERE id = $1 AND $2::bigint IS NOT NULL)`;

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

  /**
   * Records the 2xx of `delivered` (if any), and reads the endpoint and its oldest queued
   * events after it (at most `limit`), in one statement; undefined when the endpoint is
   * deleted.
   */
  async next(
    endpointId: string,
    delivered: string | null,
    limit: number,
  ): Promise<{ endpoint: SenderEndpoint; events: StoredNameEvent[] } | undefined> {
    const rows = await this.sql.query<QueuedRow>({
      name: 'webhook-next-deliveries',
      text: `WITH ${ACK}
             SELECT w.url, w.format, w.secret, w.gone_at IS NOT NULL AS gone,
                    e.id::text AS "eventId", e.user_id AS "userId", e.type, e.name,
                    e.changed_at AS "changedAt"
               FROM webhook_endpoints w
               LEFT JOIN LATERAL (SELECT d.event_id FROM webhook_deliveries d
                                   WHERE d.endpoint_id = w.id AND d.event_id > coalesce($2, 0)
                                   ORDER BY d.event_id LIMIT $3) d ON true
               LEFT JOIN name_change_events e ON e.id = d.event_id
              WHERE w.id = $1
              ORDER BY d.event_id`,
      values: [endpointId, delivered, limit],
    });
    if (rows.length === 0) return undefined;
    const { url, format, secret, gone } = rows[0];
    const events = rows
      .filter((row) => row.eventId !== null)
      .map((row) => ({
        id: row.eventId!,
        userId: row.userId,
        type: row.type,
        name: row.name,
        changedAt: row.changedAt.toISOString(),
      }));
    return { endpoint: { url, format, secret, gone }, events };
  }

  /**
   * Records the 2xx of `delivered` (if any), and tells whether `eventId` is still to be sent:
   * the endpoint is there and has not answered 410, and the event is queued (not erased).
   * Undefined when the endpoint is deleted. One statement: a sender makes it before an attempt
   * when it cannot trust what it read (nothing tells it of erasures: see WebhookQueueWatch).
   */
  async stillQueued(
    endpointId: string,
    delivered: string | null,
    eventId: string,
  ): Promise<boolean | undefined> {
    const [row] = await this.sql.query<{ queued: boolean }>({
      name: 'webhook-still-queued',
      text: `WITH ${ACK}
             SELECT w.gone_at IS NULL AND EXISTS (SELECT 1 FROM webhook_deliveries d
                                                   WHERE d.endpoint_id = w.id AND d.event_id = $3) AS queued
               FROM webhook_endpoints w WHERE w.id = $1`,
      values: [endpointId, delivered, eventId],
    });
    return row?.queued;
  }

  /**
   * Records the 2xx of each `[endpointId, eventId]` (and so of every event before it, for
   * that endpoint), in one statement.
   */
  async delivered(acks: readonly (readonly [string, string])[]): Promise<void> {
    const sorted = [...acks].sort(([a], [b]) => Number(BigInt(a) - BigInt(b)));
    await this.sql.query({
      name: 'webhook-delivered',
      text: `WITH acked AS (SELECT * FROM unnest($1::bigint[], $2::bigint[]) AS a(endpoint_id, event_id)),
               done AS (DELETE FROM webhook_deliveries d USING acked a, webhook_endpoints w
                         WHERE w.id = a.endpoint_id AND d.endpoint_id = a.endpoint_id
                           AND d.event_id > coalesce(w.last_delivered_event_id, 0)
                           AND d.event_id <= a.event_id)
             UPDATE webhook_endpoints w
                SET last_delivered_event_id = greatest(w.last_delivered_event_id, a.event_id),
                    failing_since = NULL
               FROM acked a WHERE w.id = a.endpoint_id`,
      values: [sorted.map(([endpointId]) => endpointId), sorted.map(([, eventId]) => eventId)],
    });
  }

  /**
   * Records the 2xx of `delivered` (if any), then that an attempt at `at` got none; with
   * `gone` (a 410), nothing more is sent.
   */
  async failed(
    endpointId: string,
    delivered: string | null,
    at: Date,
    gone: boolean,
  ): Promise<void> {
    await this.sql.query({
      name: 'webhook-failed',
      text: `WITH done AS (${DEQUEUE})
             UPDATE webhook_endpoints
                SET last_delivered_event_id = greatest(last_delivered_event_id, $2),
                    failing_since = coalesce(CASE WHEN $2::bigint IS NULL THEN failing_since END, $3),
                    gone_at = CASE WHEN $4 THEN $3 ELSE gone_at END
              WHERE id = $1`,
      values: [endpointId, delivered, at, gone],
    });
  }
}
