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

/**
 * A 2xx and how far it takes the endpoint: `eventId` (null: none, the endpoint only read past
 * events that are not its) and every matching event up to `through` are delivered.
 */
export interface DeliveredUpTo {
  eventId: string | null;
  through: string;
}

/** The events an endpoint is to get next, as read. */
export interface NextEvents {
  endpoint: SenderEndpoint;
  /** Its oldest undelivered events, in id order. */
  events: StoredNameEvent[];
  /** Once `events` are delivered, every matching event up to this id is. */
  through: string;
  /** How far it was delivered when read. */
  deliveredThrough: string;
}

interface EventRow extends SenderEndpoint {
  through: string;
  deliveredThrough: string;
  eventId: string | null;
  userId: string;
  type: StoredNameEvent['type'];
  name: string;
  changedAt: Date;
}

/**
 * Records `$2` (a DeliveredUpTo's eventId) and `$3` (its through) for endpoint `$1`, unless
 * `$3` is null. A 2xx clears `failingSince`. Records commute: one made late never moves the
 * endpoint back.
 */
const RECORD = `recorded AS (
  UPDATE webhook_endpoints
     SET last_delivered_event_id = greatest(last_delivered_event_id, $2::bigint),
         delivered_through = greatest(delivered_through, $3::bigint),
         failing_since = CASE WHEN $2::bigint IS NULL THEN failing_since END
   WHERE id = $1 AND $3::bigint IS NOT NULL)`;

/**
 * The events endpoint `w` (a row of webhook_endpoints) gets after id `after`, each branch
 * closed by `rest` (more conditions, an order, a limit): those of a user filter through the
 * user's index, the others in id order. One condition for both (`w.user_id IS NULL OR …`)
 * walked every event in id order for a user's few (20 of a user's behind 2,000,000 events:
 * 700 ms, against 0.6 ms), and so did one order and limit over both branches.
 */
export function matchingEvents(after: string, rest = ''): string {
  const branch = (filter: string) =>
    `(SELECT * FROM name_change_events e
       WHERE ${filter} AND e.id > ${after} AND (w.type IS NULL OR e.type = w.type) ${rest})`;
  return `${branch('w.user_id IS NULL')} UNION ALL ${branch('e.user_id = w.user_id')}`;
}

/**
 * Every query on how far an endpoint's deliveries are. An endpoint gets the events stored
 * after its `delivered_through` that match its filters, read from name_change_events up to the
 * webhooks consumer's position (webhook_queue_position: every event up to it is committed).
 * An erased event is not there to read.
 */
@Injectable()
export class WebhookDeliveriesRepository {
  constructor(private readonly sql: SqlService) {}

  /** The webhooks consumer has read every event up to `eventId`: senders may read them. */
  async readUpTo(eventId: string): Promise<void> {
    await this.sql.query({
      name: 'webhook-read-up-to',
      text: `INSERT INTO webhook_queue_position (id, event_id) VALUES (true, $1)
             ON CONFLICT (id) DO UPDATE SET event_id = greatest(webhook_queue_position.event_id, excluded.event_id)`,
      values: [eventId],
    });
  }

  /**
   * Records `delivered` (if any), and reads the endpoint and its oldest undelivered events
   * (at most `limit`), in one statement; undefined when the endpoint is deleted.
   */
  async next(
    endpointId: string,
    delivered: DeliveredUpTo | null,
    limit: number,
  ): Promise<NextEvents | undefined> {
    const rows = await this.sql.query<EventRow>({
      name: 'webhook-next-events',
      text: `WITH ${RECORD},
               read AS (SELECT w.*, greatest(w.delivered_through, $3::bigint) AS after,
                               coalesce((SELECT event_id FROM webhook_queue_position), 0) AS upto
                          FROM webhook_endpoints w WHERE w.id = $1)
             SELECT w.url, w.format, w.secret, w.gone_at IS NOT NULL AS gone,
                    w.after::text AS "deliveredThrough",
                    (CASE WHEN count(e.id) OVER () < $4 THEN greatest(w.upto, w.after)
                          ELSE max(e.id) OVER () END)::text AS through,
                    e.id::text AS "eventId", e.user_id AS "userId", e.type, e.name,
                    e.changed_at AS "changedAt"
               FROM read w
               LEFT JOIN LATERAL (${matchingEvents('w.after', 'AND e.id <= w.upto ORDER BY e.id LIMIT $4')}) e ON true
              ORDER BY e.id`,
      values: [endpointId, delivered?.eventId ?? null, delivered?.through ?? null, limit],
    });
    if (rows.length === 0) return undefined;
    const { url, format, secret, gone, through, deliveredThrough } = rows[0];
    const events = rows
      .filter((row) => row.eventId !== null)
      .map((row) => ({
        id: row.eventId!,
        userId: row.userId,
        type: row.type,
        name: row.name,
        changedAt: row.changedAt.toISOString(),
      }));
    return { endpoint: { url, format, secret, gone }, events, through, deliveredThrough };
  }

  /**
   * Records `delivered` (if any), and tells whether `eventId` is still to be sent: the
   * endpoint is there and has not answered 410, and the event is stored (not erased).
   * Undefined when the endpoint is deleted. One statement: a sender makes it before an attempt
   * when it cannot trust what it read (nothing tells it of erasures: see WebhookQueueWatch).
   */
  async stillToSend(
    endpointId: string,
    delivered: DeliveredUpTo | null,
    eventId: string,
  ): Promise<boolean | undefined> {
    const [row] = await this.sql.query<{ queued: boolean }>({
      name: 'webhook-still-to-send',
      text: `WITH ${RECORD}
             SELECT w.gone_at IS NULL AND EXISTS (SELECT 1 FROM name_change_events e WHERE e.id = $4) AS queued
               FROM webhook_endpoints w WHERE w.id = $1`,
      values: [endpointId, delivered?.eventId ?? null, delivered?.through ?? null, eventId],
    });
    return row?.queued;
  }

  /** Records what each endpoint got delivered, in one statement. */
  async delivered(records: readonly (readonly [string, DeliveredUpTo])[]): Promise<void> {
    const sorted = [...records].sort(([a], [b]) => Number(BigInt(a) - BigInt(b)));
    await this.sql.query({
      name: 'webhook-delivered',
      text: `UPDATE webhook_endpoints w
                SET last_delivered_event_id = greatest(w.last_delivered_event_id, r.event_id),
                    delivered_through = greatest(w.delivered_through, r.through),
                    failing_since = CASE WHEN r.event_id IS NULL THEN w.failing_since END
               FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS r(endpoint_id, event_id, through)
              WHERE w.id = r.endpoint_id`,
      values: [
        sorted.map(([endpointId]) => endpointId),
        sorted.map(([, record]) => record.eventId),
        sorted.map(([, record]) => record.through),
      ],
    });
  }

  /**
   * Records `delivered` (if any), then that an attempt at `at` got no 2xx; with `gone` (a
   * 410), nothing more is sent.
   */
  async failed(
    endpointId: string,
    delivered: DeliveredUpTo | null,
    at: Date,
    gone: boolean,
  ): Promise<void> {
    await this.sql.query({
      name: 'webhook-failed',
      text: `UPDATE webhook_endpoints
                SET last_delivered_event_id = greatest(last_delivered_event_id, $2::bigint),
                    delivered_through = greatest(delivered_through, $3::bigint),
                    failing_since = coalesce(CASE WHEN $2::bigint IS NULL THEN failing_since END, $4),
                    gone_at = CASE WHEN $5 THEN $4 ELSE gone_at END
              WHERE id = $1`,
      values: [endpointId, delivered?.eventId ?? null, delivered?.through ?? null, at, gone],
    });
  }
}
