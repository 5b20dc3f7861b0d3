import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventsOf, uniqueUserId } from './support/events.js';
import { PROCESS_TIMEOUT_MS, useInstanceProcesses } from './support/instances.js';
import { metric } from './support/metrics.js';
import { waitFor } from './support/ports.js';
import { WebhookReceiver } from './support/webhook-receiver.js';
import { createEndpoint, deliveries, fieldsOf, store, WEBHOOK_ENV } from './support/webhooks.js';

/** Short leases: a killed sender's endpoint (and the consumer) are taken over in seconds. */
const ENV = { ...WEBHOOK_ENV, WEBHOOK_LEASE_MS: '3000', CONSUMER_LEASE_MS: '3000' };

describe('webhooks across instances (node dist/main.js processes)', () => {
  const processes = useInstanceProcesses();
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
  });
  afterAll(() => receiver.close());

  it(
    'one instance at a time sends to an endpoint; when it is killed mid-stream the other sends the rest, in order',
    async () => {
      const [a, b] = [await processes.start(ENV), await processes.start(ENV)];
      const { id } = await createEndpoint(a.url, { url: receiver.url });
      const userId = uniqueUserId('webhooks');
      const next = eventsOf(userId);

      // Both run: each event, stored through either, is received once, in order.
      const first = Array.from({ length: 10 }, () => next());
      for (const [i, body] of first.entries()) await store([a, b][i % 2].url, body);
      await waitFor('the first ten', () => receiver.received.length >= 10);
      expect(receiver.data.map(fieldsOf)).toEqual(first.map(fieldsOf));
      const sentBy = [
        await metric(a.url, deliveries(id, 'delivered')),
        await metric(b.url, deliveries(id, 'delivered')),
      ];
      expect([...sentBy].sort((x, y) => x - y)).toEqual([0, 10]);
      const [sender, survivor] = sentBy[0] === 10 ? [a, b] : [b, a];

      // The receiver holds the sender's third next attempt unanswered; the sender is killed
      // while it waits, and the survivor takes the endpoint over once the lease expires.
      const base = receiver.received.length;
      receiver.answer = (_request, index) => (index === base + 2 ? 'hang' : { status: 204 });
      const second = Array.from({ length: 10 }, () => next());
      for (const body of second) await store(survivor.url, body);
      await waitFor('the attempt held', () => receiver.received.length >= base + 3);
      await sender.stop('SIGKILL');
      await waitFor(
        'every event delivered',
        () => new Set(receiver.data.map((d) => d.id)).size >= 20,
        { timeoutMs: 60_000 },
      );

      const ids = receiver.data.map((d) => d.id);
      const firstSeen = ids.filter((eventId, i) => ids.indexOf(eventId) === i);
      expect(firstSeen).toEqual((await processes.stored(userId)).map((row) => row.id));
      expect(receiver.data.map(fieldsOf).filter((_d, i) => ids.indexOf(ids[i]) === i)).toEqual(
        [...first, ...second].map(fieldsOf),
      );
      // Only the attempt held when the sender died came twice, and the survivor sent it again.
      expect(ids).toHaveLength(21);
      expect(ids[base + 3]).toBe(ids[base + 2]);
      expect(await metric(survivor.url, deliveries(id, 'delivered'))).toBe(8);
    },
    PROCESS_TIMEOUT_MS,
  );
});
