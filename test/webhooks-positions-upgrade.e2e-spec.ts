/**
 * An upgrade from the schema that queued a row per endpoint and undelivered event
 * (webhook_deliveries) to a position per endpoint in the event table
 * (EndpointPositions1769400000000): each endpoint gets what it was still to get, from the
 * first event queued for it, and nothing it already had.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { EndpointPositions1769400000000 } from '../src/webhooks/migrations/1769400000000-endpoint-positions.js';
import { DropWebhookQueueNotifications1769700000000 } from '../src/webhooks/migrations/1769700000000-drop-webhook-queue-notifications.js';
import { useApp } from './support/app.js';
import { nameEvent, type NameEventBody } from './support/events.js';
import { waitFor } from './support/ports.js';
import { migrateAllBut } from './support/schema.js';
import { WebhookReceiver } from './support/webhook-receiver.js';
import { fieldsOf, statusOf, store, WEBHOOK_ENV } from './support/webhooks.js';

/** Events 1 to 8 as the previous version stored them; 5 was erased since. */
const EVENTS: NameEventBody[] = Array.from({ length: 8 }, (_, i) =>
  nameEvent({ type: i % 2 === 1 ? 'displayname' : 'username' }),
);
const ERASED = 5;
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

describe('webhook deliveries queued by the previous schema, after an upgrade', () => {
  const receivers: Record<'all' | 'displayNames' | 'late', WebhookReceiver | undefined> = {
    all: undefined,
    displayNames: undefined,
    late: undefined,
  };
  const ids: Record<keyof typeof receivers, string> = { all: '', displayNames: '', late: '' };

  const fx = useApp({
    env: async (db) => {
      await migrateAllBut(db!, [
        EndpointPositions1769400000000,
        DropWebhookQueueNotifications1769700000000,
      ]);
      await db!.query(
        `INSERT INTO name_change_events (user_id, type, name, changed_at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])`,
        [
          EVENTS.map((e) => e.userId),
          EVENTS.map((e) => e.type),
          EVENTS.map((e) => e.name),
          EVENTS.map((e) => e.changedAt),
        ],
      );
      await db!.query('DELETE FROM name_change_events WHERE id = $1', [ERASED]);
      // The consumer had read up to 6 and queued it; 7 and 8 were stored after.
      await db!.query(`INSERT INTO name_event_consumers (name, position) VALUES ('webhooks', 6)`);
      await db!.query('INSERT INTO webhook_queue_position (id, event_id) VALUES (true, 6)');
      for (const key of Object.keys(receivers) as (keyof typeof receivers)[]) {
        receivers[key] = await WebhookReceiver.start();
      }
      // `all` had 1 and 2, and 3, 4 and 6 queued (5 went with its erasure). `displayNames`
      // (events 2, 4, 6, 8) had everything queued delivered. `late` was created after 7.
      const [all, displayNames, late] = await db!.query<{ id: string }>(
        `INSERT INTO webhook_endpoints (url, format, secret, type, start_after, last_delivered_event_id)
         VALUES ($1, 'standard', $4, NULL, 0, 2), ($2, 'standard', $4, 'displayname', 0, 6),
                ($3, 'standard', $4, NULL, 7, NULL)
         RETURNING id::text AS id`,
        [receivers.all!.url, receivers.displayNames!.url, receivers.late!.url, SECRET],
      );
      Object.assign(ids, { all: all.id, displayNames: displayNames.id, late: late.id });
      await db!.query(
        `INSERT INTO webhook_deliveries (endpoint_id, event_id) VALUES ($1, 3), ($1, 4), ($1, 6)`,
        [all.id],
      );
      return WEBHOOK_ENV;
    },
  });

  afterAll(async () => {
    for (const receiver of Object.values(receivers)) await receiver?.close();
  });

  const received = (key: keyof typeof receivers) => receivers[key]!.data.map(fieldsOf);
  const events = (...numbers: number[]) => numbers.map((n) => fieldsOf(EVENTS[n - 1]));

  it('delivers what each endpoint was still to get, once, then what is stored after', async () => {
    await waitFor('all caught up', async () => (await statusOf(fx.url, ids.all)).pending === 0);
    await waitFor('late caught up', async () => (await statusOf(fx.url, ids.late)).pending === 0);
    expect(received('all')).toEqual(events(3, 4, 6, 7, 8));
    expect(received('displayNames')).toEqual(events(8));
    expect(received('late')).toEqual(events(8));
    expect(receivers.all!.data.map(({ id }) => id)).toEqual(['3', '4', '6', '7', '8']);

    const next = nameEvent({ type: 'displayname' });
    await store(fx.url, next);
    const counts = { all: 6, displayNames: 2, late: 2 };
    for (const key of Object.keys(receivers) as (keyof typeof receivers)[]) {
      await waitFor(`${key} has the next`, () => receivers[key]!.received.length >= counts[key]);
    }
    expect(received('all').slice(5)).toEqual([fieldsOf(next)]);
    expect(received('displayNames')).toEqual([...events(8), fieldsOf(next)]);
    expect(received('late')).toEqual([...events(8), fieldsOf(next)]);
    for (const key of Object.keys(receivers) as (keyof typeof receivers)[]) {
      await waitFor(`${key}: nothing pending`, async () => {
        const status = await statusOf(fx.url, ids[key]);
        return status.pending === 0 && status.lastDeliveredEventId === '9';
      });
    }
    const [{ table }] = await fx.db.query<{ table: string | null }>(
      `SELECT to_regclass('webhook_deliveries')::text AS table`,
    );
    expect(table).toBeNull();
  });
});
