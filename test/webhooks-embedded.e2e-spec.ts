import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { useApp } from './support/app.js';
import { nameEvent } from './support/events.js';
import { waitFor } from './support/ports.js';
import { START_TIMEOUT_MS } from './support/service-process.js';
import { WebhookReceiver } from './support/webhook-receiver.js';
import { createEndpoint, fieldsOf, statusOf, store, WEBHOOK_ENV } from './support/webhooks.js';

describe('webhooks with the embedded defaults (PGlite, in-process bus, one instance)', () => {
  const fx = useApp({ backend: 'embedded', env: WEBHOOK_ENV });
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
  });
  afterAll(() => receiver.close());

  it(
    'delivers, and after a restart resumes with what was not delivered yet',
    async () => {
      const { id } = await createEndpoint(fx.url, { url: receiver.url });
      const before = nameEvent();
      await store(fx.url, before);
      await waitFor('the first', () => receiver.received.length >= 1);

      receiver.answer = () => ({ status: 503 });
      const undelivered = [nameEvent(), nameEvent()];
      for (const body of undelivered) await store(fx.url, body);
      await waitFor('an attempt refused', () => receiver.received.length >= 2);
      await fx.stop();
      const attempts = receiver.received.length;
      receiver.answer = () => ({ status: 200 });
      await fx.start();

      await waitFor('the rest after the restart', () => receiver.received.length >= attempts + 2);
      const after = receiver.data.slice(attempts).map(fieldsOf);
      expect(after).toEqual(undelivered.map(fieldsOf));
      expect(receiver.data.slice(1, attempts).map(fieldsOf)).toEqual(
        Array.from({ length: attempts - 1 }, () => fieldsOf(undelivered[0])),
      );
      await waitFor('nothing pending', async () => (await statusOf(fx.url, id)).pending === 0);
      expect(await statusOf(fx.url, id)).toMatchObject({
        failingSince: null,
        lastDeliveredEventId: receiver.data.at(-1)!.id,
      });
    },
    START_TIMEOUT_MS * 2,
  );
});
