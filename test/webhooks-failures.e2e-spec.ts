import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { useApp } from './support/app.js';
import { nameEvent } from './support/events.js';
import { metric } from './support/metrics.js';
import { waitFor } from './support/ports.js';
import { WebhookReceiver } from './support/webhook-receiver.js';
import {
  createEndpoint,
  deliveries,
  endpointsOf,
  fieldsOf,
  statusOf,
  store,
  storeAll,
  WEBHOOK_ENV,
} from './support/webhooks.js';

/** A hanging receiver costs the 10 s answer timeout, and the first retry about a second. */
const HANG_TEST_MS = 40_000;

describe('webhook receivers that fail', () => {
  const fx = useApp({ env: WEBHOOK_ENV });
  let receiver: WebhookReceiver;
  const created: string[] = [];
  const register = async () => {
    const endpoint = await createEndpoint(fx.url, { url: receiver.url });
    created.push(endpoint.id);
    return endpoint;
  };

  beforeEach(async () => {
    receiver = await WebhookReceiver.start();
  });
  afterEach(async () => {
    for (const id of created.splice(0)) await endpointsOf(fx.url).delete(id);
    await receiver.close();
  });

  it(
    'gives up on an attempt not answered within 10 s, closes it, and tries again',
    async () => {
      receiver.answer = (_request, index) => (index === 0 ? 'hang' : { status: 200 });
      const { id } = await register();
      const bodies = [nameEvent(), nameEvent()];
      await storeAll(fx.url, bodies);
      await waitFor('the retry and the next', () => receiver.received.length >= 3, {
        timeoutMs: HANG_TEST_MS - 5_000,
      });
      expect(receiver.data.map(fieldsOf)).toEqual([bodies[0], bodies[0], bodies[1]].map(fieldsOf));
      expect(await metric(fx.url, deliveries(id, 'timeout'))).toBe(1);
      await waitFor('delivered', async () => (await statusOf(fx.url, id)).pending === 0);
    },
    HANG_TEST_MS,
  );

  it("waits as long as the receiver's Retry-After says, not its own back-off", async () => {
    const at: number[] = [];
    receiver.answer = (_request, index) => {
      at.push(Date.now());
      return index === 0 ? { status: 503, headers: { 'retry-after': '3' } } : { status: 204 };
    };
    const { id } = await register();
    await store(fx.url, nameEvent());
    await waitFor('the retry', () => receiver.received.length >= 2, { timeoutMs: 10_000 });
    // The back-off's first retry comes after about a second (±20 %); the receiver said three.
    expect(at[1] - at[0]).toBeGreaterThanOrEqual(2_950);
    const [first, retry] = receiver.received;
    expect(retry.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(await metric(fx.url, deliveries(id, 'rejected'))).toBe(1);
    await waitFor('delivered', async () => (await statusOf(fx.url, id)).pending === 0);
    expect((await statusOf(fx.url, id)).failingSince).toBeNull();
  });

  it('reads an endless answer only so far, and takes its 2xx', async () => {
    receiver.answer = () => 'endless';
    const { id } = await register();
    const bodies = [nameEvent(), nameEvent()];
    await storeAll(fx.url, bodies);
    await waitFor('both delivered', async () => (await statusOf(fx.url, id)).pending === 0);
    expect(receiver.data.map(fieldsOf)).toEqual(bodies.map(fieldsOf));
    expect(await metric(fx.url, deliveries(id, 'delivered'))).toBe(2);
  });

  it('never follows a redirect: a 3xx is an answer without a 2xx', async () => {
    const elsewhere = await WebhookReceiver.start();
    try {
      receiver.answer = (_request, index) =>
        index === 0 ? { status: 307, headers: { location: elsewhere.url } } : { status: 200 };
      const { id } = await register();
      const event = nameEvent();
      await store(fx.url, event);
      await waitFor('the retry', () => receiver.received.length >= 2);
      expect(receiver.data.map(fieldsOf)).toEqual([event, event].map(fieldsOf));
      expect(elsewhere.received).toEqual([]);
      expect(await metric(fx.url, deliveries(id, 'rejected'))).toBe(1);
    } finally {
      await elsewhere.close();
    }
  });

  it('stops at a 410 Gone: failingSince set, pending still counting, nothing more sent', async () => {
    receiver.answer = () => ({ status: 410 });
    const { id } = await register();
    const first = nameEvent();
    await store(fx.url, first);
    await waitFor('the 410', () => receiver.received.length >= 1);
    const gone = await waitFor('failingSince set', async () => {
      const status = await statusOf(fx.url, id);
      return status.failingSince !== null && status;
    });
    expect(gone).toMatchObject({ pending: 1, lastDeliveredEventId: null });

    receiver.answer = () => ({ status: 200 });
    const later = [nameEvent(), nameEvent()];
    await storeAll(fx.url, later);
    await waitFor('pending counting', async () => (await statusOf(fx.url, id)).pending === 3);
    // A second endpoint gets the same events: once it has them, the first would have too.
    const control = await WebhookReceiver.start();
    try {
      const { id: controlId } = await createEndpoint(fx.url, { url: control.url });
      created.push(controlId);
      const sentinel = nameEvent();
      await store(fx.url, sentinel);
      await waitFor('the control', () => control.received.length >= 1);
      expect(receiver.received).toHaveLength(1);
      expect(await statusOf(fx.url, id)).toMatchObject({
        pending: 4,
        failingSince: gone.failingSince,
      });
      expect(await metric(fx.url, deliveries(id, 'gone'))).toBe(1);
    } finally {
      await control.close();
    }
  });
});
