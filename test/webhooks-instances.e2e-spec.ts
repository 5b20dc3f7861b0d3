import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { eventsOf, uniqueUserId } from './support/events.js';
import { PROCESS_TIMEOUT_MS, useInstanceProcesses } from './support/instances.js';
import { metric } from './support/metrics.js';
import { waitFor } from './support/ports.js';
import { type Answer, WebhookReceiver } from './support/webhook-receiver.js';
import {
  createEndpoint,
  deliveries,
  endpointsOf,
  fieldsOf,
  statusOf,
  store,
  WEBHOOK_ENV,
} from './support/webhooks.js';

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
      // Each 2xx is recorded before the next attempt; killed before that, it would come again.
      const beforeHeld = receiver.data[base + 1].id;
      await waitFor(
        'the attempts before it recorded',
        async () => (await statusOf(sender.url, id)).lastDeliveredEventId === beforeHeld,
      );
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

  it(
    'an endpoint deleted through another instance gets nothing more once the DELETE is answered, even what its sender had read',
    async () => {
      const [a, b] = [await processes.start(ENV), await processes.start(ENV)];
      const deleted = await WebhookReceiver.start();
      try {
        // Refused until the queue holds three more: the retry reads the four at once, and is held.
        let release!: () => void;
        const held = new Promise<Answer>((resolve) => (release = () => resolve({ status: 204 })));
        deleted.answer = (_request, index) => (index === 0 ? { status: 503 } : held);
        const { id } = await createEndpoint(a.url, { url: deleted.url });
        const next = eventsOf(uniqueUserId('webhooks'));
        await store(a.url, next());
        await waitFor('the first refused', () => deleted.received.length >= 1);
        for (let i = 0; i < 3; i++) await store(a.url, next());
        await waitFor('the retry held', () => deleted.received.length >= 2, { timeoutMs: 10_000 });
        const refusedBy = [
          await metric(a.url, deliveries(id, 'rejected')),
          await metric(b.url, deliveries(id, 'rejected')),
        ];
        const other = refusedBy[0] === 1 ? b : a;

        expect((await endpointsOf(other.url).delete(id)).status).toBe(200);
        release();
        // A sentinel endpoint created after the DELETE gets an event stored after it: by then
        // the deleted one's sender has had every chance to send what it had read.
        const sentinel = await WebhookReceiver.start();
        try {
          await createEndpoint(other.url, { url: sentinel.url });
          await store(other.url, next());
          await waitFor('the sentinel', () => sentinel.received.length >= 1, { timeoutMs: 20_000 });
          expect(deleted.received).toHaveLength(2);
        } finally {
          await sentinel.close();
        }
      } finally {
        await deleted.close();
      }
    },
    PROCESS_TIMEOUT_MS,
  );
});
