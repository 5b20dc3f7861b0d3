import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { useApp } from './support/app.js';
import { nameEvent, uniqueUserId } from './support/events.js';
import { metric } from './support/metrics.js';
import { waitFor } from './support/ports.js';
import { WebhookReceiver } from './support/webhook-receiver.js';
import {
  createEndpoint,
  deliveries,
  endpointsOf,
  fieldsOf,
  pendingSeries,
  signatureValid,
  statusOf,
  store,
  storeAll,
  WEBHOOK_ENV,
} from './support/webhooks.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('standard webhooks', () => {
  const fx = useApp({ env: WEBHOOK_ENV });
  let receiver: WebhookReceiver;
  const created: string[] = [];
  const register = async (body: object = {}) => {
    const endpoint = await createEndpoint(fx.url, { url: receiver.url, ...body });
    created.push(endpoint.id);
    return endpoint;
  };
  const idsOf = async (userId: string) =>
    (
      await fx.db.query<{ id: string }>(
        'SELECT e.id::text AS id FROM name_change_events e WHERE e.user_id = $1 ORDER BY e.id',
        [userId],
      )
    ).map((row) => row.id);

  beforeEach(async () => {
    receiver = await WebhookReceiver.start();
  });
  afterEach(async () => {
    for (const id of created.splice(0)) await endpointsOf(fx.url).delete(id);
    await receiver.close();
  });

  it('sends each event stored after the 201 once, in id order, signed per Standard Webhooks', async () => {
    await store(fx.url, nameEvent());
    const { id, secret } = await register();
    const bodies = [nameEvent(), nameEvent({ name: 'quote " emoji 😀\nnew line' }), nameEvent()];
    await storeAll(fx.url, bodies);
    await store(fx.url, bodies[0]); // a repeat: stored once already, not sent again
    const sentinel = nameEvent();
    await store(fx.url, sentinel);
    await waitFor('the sentinel', () => receiver.data.some((d) => d.userId === sentinel.userId));

    expect(receiver.data.map(fieldsOf)).toEqual([...bodies, sentinel].map(fieldsOf));
    const storedIds: string[] = [];
    for (const body of [...bodies, sentinel]) storedIds.push(...(await idsOf(body.userId)));
    expect(receiver.data.map((d) => d.id)).toEqual(storedIds);
    for (const request of receiver.received) {
      expect(request.method).toBe('POST');
      expect(request.path).toBe('/hook');
      expect(request.headers['content-type']).toBe('application/json');
      const body = request.json as { type: string; timestamp: string; data: { id: string } };
      expect(Object.keys(body)).toEqual(['type', 'timestamp', 'data']);
      expect(body.type).toBe('name.changed');
      expect(body.timestamp).toMatch(ISO);
      expect(Object.keys(body.data)).toEqual(['id', 'userId', 'type', 'name', 'changedAt']);
      expect(request.headers['webhook-id']).toBe(body.data.id);
      expect(request.headers['webhook-timestamp']).toBe(
        String(Math.floor(Date.parse(body.timestamp) / 1000)),
      );
      expect(signatureValid(secret!, request.headers, request.body)).toBe(true);
      expect(
        signatureValid(
          `whsec_${Buffer.alloc(32).toString('base64')}`,
          request.headers,
          request.body,
        ),
      ).toBe(false);
    }
    await waitFor(
      'the status',
      async () => (await statusOf(fx.url, id)).lastDeliveredEventId === storedIds.at(-1),
    );
    expect(await statusOf(fx.url, id)).toMatchObject({ pending: 0, failingSince: null });
    expect(await metric(fx.url, deliveries(id, 'delivered'))).toBe(4);
    expect(await metric(fx.url, pendingSeries(id))).toBe(0);
  });

  it('sends only the events its userId and type filters match', async () => {
    const userId = uniqueUserId('filtered');
    const { id } = await register({ userId, type: 'displayname' });
    const wanted = nameEvent({ userId, type: 'displayname', name: 'wanted' });
    await storeAll(fx.url, [
      nameEvent({ userId, type: 'username' }),
      nameEvent({ type: 'displayname' }),
      wanted,
    ]);
    await waitFor('the match', () => receiver.received.length > 0);
    const last = nameEvent({ userId, type: 'displayname', name: 'last' });
    await store(fx.url, last);
    await waitFor('the last match', () => receiver.received.length > 1);
    expect(receiver.data.map(fieldsOf)).toEqual([wanted, last].map(fieldsOf));

    // Events that are not its own are read past once: its position moves beyond them.
    const others = [nameEvent({ type: 'displayname' }), nameEvent({ userId, type: 'username' })];
    await storeAll(fx.url, others);
    const newest = (await idsOf(userId)).at(-1);
    const positionOf = async () =>
      (
        await fx.db.query<{ through: string }>(
          'SELECT delivered_through::text AS through FROM webhook_endpoints WHERE id = $1',
          [id],
        )
      )[0].through;
    await waitFor('read past the others', async () => (await positionOf()) === newest);
    expect(await statusOf(fx.url, id)).toMatchObject({
      lastDeliveredEventId: receiver.data[1].id,
      pending: 0,
      failingSince: null,
    });
    expect(receiver.received).toHaveLength(2);
  });

  it('retries an event answered 500 with the same webhook-id, keeps the order, and tells it failing meanwhile', async () => {
    receiver.answer = (_request, index) => (index < 2 ? { status: 500 } : { status: 200 });
    const { id } = await register();
    const bodies = [nameEvent(), nameEvent()];
    await storeAll(fx.url, bodies);
    await waitFor('the first refusal', () => receiver.received.length >= 1);
    const failing = await waitFor('failingSince set', async () => {
      const status = await statusOf(fx.url, id);
      return status.failingSince !== null && status;
    });
    expect(failing.failingSince).toMatch(ISO);
    expect(failing.pending).toBe(2);
    expect(failing.lastDeliveredEventId).toBeNull();

    await waitFor('both delivered', () => receiver.received.length >= 4, { timeoutMs: 20_000 });
    const [first, second] = receiver.data
      .map((d) => d.id)
      .filter((v, i, all) => all.indexOf(v) === i);
    expect(receiver.received.map((r) => r.headers['webhook-id'])).toEqual([
      first,
      first,
      first,
      second,
    ]);
    expect(receiver.data.map(fieldsOf)).toEqual(
      [bodies[0], bodies[0], bodies[0], bodies[1]].map(fieldsOf),
    );
    await waitFor('no longer failing', async () => (await statusOf(fx.url, id)).pending === 0);
    expect(await statusOf(fx.url, id)).toMatchObject({
      failingSince: null,
      lastDeliveredEventId: second,
    });
    expect(await metric(fx.url, deliveries(id, 'rejected'))).toBe(2);
  }, 40_000);
});
