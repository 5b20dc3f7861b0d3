import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { useApp } from './support/app.js';
import { nameEvent } from './support/events.js';
import { metric } from './support/metrics.js';
import { waitFor } from './support/ports.js';
import { WebhookReceiver } from './support/webhook-receiver.js';
import {
  createEndpoint,
  deliveries,
  endpointsOf,
  ENDPOINTS,
  fieldsOf,
  store,
  WEBHOOK_ENV,
} from './support/webhooks.js';

/**
 * Deliveries do not depend on how the instance sending them is configured for the routes,
 * and the target is checked again, by the sending instance, before each attempt.
 */
describe('webhooks as operators change the configuration', () => {
  const fx = useApp({ env: WEBHOOK_ENV });
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
  });
  afterAll(() => receiver.close());

  it('keeps delivering when ADMIN_TOKEN is unset later, and vets the target again before each delivery', async () => {
    const { id } = await createEndpoint(fx.url, { url: receiver.url });
    const first = nameEvent();
    await store(fx.url, first);
    await waitFor('the first', () => receiver.received.length >= 1);

    // The instance that registered it goes; one without ADMIN_TOKEN takes the deliveries over.
    const adminOff = await fx.startInstance({ ADMIN_TOKEN: undefined });
    await fx.stop();
    const second = nameEvent();
    await store(adminOff.url, second);
    await waitFor('the second', () => receiver.received.length >= 2, { timeoutMs: 30_000 });
    expect(receiver.data.map(fieldsOf)).toEqual([first, second].map(fieldsOf));
    const hidden = await endpointsOf(adminOff.url).list();
    expect(hidden.body).toEqual({ message: `Cannot GET ${ENDPOINTS}`, code: 404 });

    // An instance that does not allow private targets refuses to send to the loopback one.
    const strict = await fx.startInstance({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' });
    await adminOff.close();
    const third = nameEvent();
    await store(strict.url, third);
    await waitFor(
      'an attempt refused',
      async () => (await metric(strict.url, deliveries(id, 'refused'))) >= 1,
      { timeoutMs: 30_000 },
    );
    expect(receiver.received).toHaveLength(2);
    const status = await endpointsOf(strict.url).get(id);
    expect(status.body).toMatchObject({ pending: 1, lastDeliveredEventId: receiver.data[1].id });
    expect(status.body.failingSince).not.toBeNull();
    await strict.close();
    await fx.start();
  }, 60_000);
});
