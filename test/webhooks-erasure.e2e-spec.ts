import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { historyPath, type HistoryBody } from './support/api.js';
import { useApp } from './support/app.js';
import { http } from './support/http.js';
import { nameEvent, type NameEventBody, uniqueUserId } from './support/events.js';
import { waitFor } from './support/ports.js';
import { admin } from './support/privacy.js';
import { type Answer, WebhookReceiver } from './support/webhook-receiver.js';
import { proxiedDatabase, type TcpProxy } from './support/tcp-proxy.js';
import type { EventsRemovedEvent } from '../src/name-events/name-event.types.js';
import { NOTIFICATIONS_APPLICATION_NAME } from '../src/database/postgres-notifications.service.js';
import { NameEventRemovalsService } from '../src/name-events/name-event-removals.service.js';
import {
  createEndpoint,
  endpointsOf,
  fieldsOf,
  statusOf,
  store,
  storeAll,
  WEBHOOK_ENV,
} from './support/webhooks.js';

describe('webhooks and what is erased or deleted', () => {
  // Postgres through a proxy, which can hold what it sends the listening connection.
  let proxy: TcpProxy;
  const fx = useApp({
    env: async (db) => {
      const proxied = await proxiedDatabase(db!.url);
      proxy = proxied.proxy;
      return { ...WEBHOOK_ENV, DATABASE_URL: proxied.url };
    },
  });
  afterAll(() => proxy?.close());
  let receiver: WebhookReceiver;
  const created: string[] = [];

  beforeEach(async () => {
    receiver = await WebhookReceiver.start();
  });
  afterEach(async () => {
    for (const id of created.splice(0)) await endpointsOf(fx.url).delete(id);
    await receiver.close();
  });

  /**
   * An endpoint whose receiver refuses everything until `open()`: a first event blocks the
   * queue (attempted at least once), and what is stored after it waits behind it.
   */
  const blockedEndpoint = async () => {
    receiver.answer = () => ({ status: 503 });
    const { id } = await createEndpoint(fx.url, { url: receiver.url });
    created.push(id);
    const blocker = nameEvent();
    await store(fx.url, blocker);
    await waitFor('the blocker attempted', () => receiver.received.length >= 1);
    return {
      id,
      blocker,
      open: () => {
        receiver.answer = () => ({ status: 200 });
      },
    };
  };
  const pendingOf = async (id: string) => (await statusOf(fx.url, id)).pending;
  const delivered = () =>
    receiver.data
      .map(fieldsOf)
      .filter(
        (d, i, all) => all.findIndex((o) => o.name === d.name && o.userId === d.userId) === i,
      );

  /** Two events of a user to erase, and one kept between them, queued behind the blocker. */
  const queueBehind = async (id: string) => {
    const userId = uniqueUserId('erased');
    const kept = nameEvent();
    await storeAll(fx.url, [nameEvent({ userId }), kept, nameEvent({ userId, name: 'again' })]);
    await waitFor('4 pending', async () => (await pendingOf(id)) === 4);
    return { userId, kept };
  };
  /** A sentinel stored last arrives after exactly `sent` (and nothing is left pending). */
  const expectSentThenSentinel = async (id: string, sent: NameEventBody[]) => {
    const sentinel = nameEvent();
    await store(fx.url, sentinel);
    await waitFor('the sentinel', () => receiver.data.some((d) => d.userId === sentinel.userId), {
      timeoutMs: 20_000,
    });
    expect(delivered()).toEqual([...sent, sentinel].map(fieldsOf));
    await waitFor('nothing pending', async () => (await pendingOf(id)) === 0);
  };

  it.each([
    ['erased', 'DELETE', 'prevnames'],
    ['opted out', 'PUT', 'opt-out'],
  ])(
    'never sends the undelivered events of a user %s',
    async (_what, method, path) => {
      const { id, blocker, open } = await blockedEndpoint();
      const { userId, kept } = await queueBehind(id);

      expect((await admin(fx.url, method, `${userId}/${path}`)).status).toBe(200);
      expect(await pendingOf(id)).toBe(2);
      open();
      await expectSentThenSentinel(id, [blocker, kept]);
    },
    30_000,
  );

  /** The blocker's retry (read with the three behind it) held; the function that lets it go. */
  const holdRetry = async () => {
    let release!: () => void;
    const held = new Promise<Answer>((resolve) => (release = () => resolve({ status: 200 })));
    const attempts = receiver.received.length;
    receiver.answer = (_request, index) => (index === attempts ? held : { status: 200 });
    await waitFor('the retry held', () => receiver.received.length > attempts, {
      timeoutMs: 10_000,
    });
    return release;
  };

  it('never sends the events of a user erased while an attempt before them is under way', async () => {
    const { id, blocker } = await blockedEndpoint();
    const { userId, kept } = await queueBehind(id);
    const release = await holdRetry();

    expect((await admin(fx.url, 'DELETE', `${userId}/prevnames`)).status).toBe(200);
    release();
    await expectSentThenSentinel(id, [blocker, kept]);
  });

  it.each([
    ['an erasure', 'DELETE', 'prevnames'],
    ['an opt-out', 'PUT', 'opt-out'],
  ])(
    "answers %s once this instance's senders know, without waiting for Postgres to tell it, so nothing erased is sent after the answer",
    async (_what, method, path) => {
      await waitFor('listening', () => fx.app.get(NameEventRemovalsService).heardEverywhere);
      const { id, blocker } = await blockedEndpoint();
      const { userId, kept } = await queueBehind(id);
      const release = await holdRetry();

      // Held: what Postgres sends the listening connection (the deletion's notification among
      // it) until the answer is given: the answer must not need it.
      const notifications = proxy.holdFromServer(NOTIFICATIONS_APPLICATION_NAME);
      const answer = await admin(fx.url, method, `${userId}/${path}`);
      // The held attempt is let go the moment the answer comes: the sender must know by then.
      release();
      notifications.release();
      expect(answer.status).toBe(200);
      await expectSentThenSentinel(id, [blocker, kept]);
    },
    30_000,
  );

  /** Every `events.removed` this instance emits from now on, until `stop`. */
  const removedEvents = () => {
    const emitter = fx.app.get(EventEmitter2);
    const heard: EventsRemovedEvent[] = [];
    const listener = (event: EventsRemovedEvent) => heard.push(event);
    emitter.on('events.removed', listener);
    return { heard, stop: () => emitter.off('events.removed', listener) };
  };

  it('listens with Postgres, and hears an erasure made through another instance', async () => {
    await waitFor('listening', () => fx.app.get(NameEventRemovalsService).heardEverywhere);
    const removed = removedEvents();
    const other = await fx.startInstance();
    try {
      const userId = uniqueUserId('erased');
      await store(fx.url, nameEvent({ userId }));
      expect((await admin(other.url, 'DELETE', `${userId}/prevnames`)).status).toBe(200);
      await waitFor('the erasure heard', () => removed.heard.some((e) => e.userId === userId));
    } finally {
      removed.stop();
      await other.close();
    }
  });

  it('listens again after its connection is cut, and counts what it may have missed as a removal', async () => {
    const removals = fx.app.get(NameEventRemovalsService);
    await waitFor('listening', () => removals.heardEverywhere);
    const removed = removedEvents();
    try {
      const listening = `SELECT pid FROM pg_stat_activity
                          WHERE datname = current_database() AND application_name = $1`;
      const [cut] = await fx.db.query<{ pid: number }>(listening, [NOTIFICATIONS_APPLICATION_NAME]);
      await fx.db.query('SELECT pg_terminate_backend($1)', [cut.pid]);
      // Anyone's removal when the connection is lost, and again when it is back.
      await waitFor(
        'listening again',
        () =>
          removals.heardEverywhere && removed.heard.filter((e) => e.userId === null).length >= 2,
      );
      const again = await fx.db.query<{ pid: number }>(listening, [NOTIFICATIONS_APPLICATION_NAME]);
      expect(again).toHaveLength(1);
      expect(again[0].pid).not.toBe(cut.pid);
    } finally {
      removed.stop();
    }
  });

  it('sends nothing more to an endpoint once its DELETE is answered', async () => {
    const { id } = await createEndpoint(fx.url, { url: receiver.url });
    const first = nameEvent();
    await store(fx.url, first);
    await waitFor('the first', () => receiver.received.length >= 1);
    const control = await WebhookReceiver.start();
    try {
      const { id: controlId } = await createEndpoint(fx.url, { url: control.url });
      created.push(controlId);
      expect((await endpointsOf(fx.url).delete(id)).status).toBe(200);
      const after = [nameEvent(), nameEvent()];
      await storeAll(fx.url, after);
      await waitFor('the control has them', () => control.received.length >= 2);
      expect(receiver.data.map(fieldsOf)).toEqual([fieldsOf(first)]);
      expect((await endpointsOf(fx.url).get(id)).status).toBe(404);
    } finally {
      await control.close();
    }
  });

  it('stops retrying an endpoint deleted while it was failing, and keeps the events', async () => {
    const { id } = await blockedEndpoint();
    const events = [nameEvent(), nameEvent()];
    await storeAll(fx.url, events);
    await waitFor('3 pending', async () => (await pendingOf(id)) === 3);
    const attempts = receiver.received.length;
    expect((await endpointsOf(fx.url).delete(id)).status).toBe(200);
    created.splice(created.indexOf(id), 1);
    expect((await endpointsOf(fx.url).get(id)).status).toBe(404);
    // The history is the service's, not the endpoint's.
    for (const event of events) {
      const history = await http<HistoryBody>(`${fx.url}${historyPath(event.userId)}`);
      expect(history.status).toBe(200);
      expect(history.body.prevnames).toEqual([
        { type: event.type, name: event.name, changedAt: event.changedAt },
      ]);
    }
    // An attempt under way when the answer was given may finish; none starts after it.
    expect(receiver.received.length - attempts).toBeLessThanOrEqual(1);
  });
});

describe('webhooks and retention', () => {
  const fx = useApp({ env: { ...WEBHOOK_ENV, RETENTION_DAYS: '1', RETENTION_INTERVAL_MS: '200' } });
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
  });
  afterAll(() => receiver.close());

  it('never sends the undelivered events that retention deletes', async () => {
    receiver.answer = () => ({ status: 503 });
    const { id } = await createEndpoint(fx.url, { url: receiver.url });
    const recent = new Date().toISOString();
    const blocker = nameEvent({ changedAt: recent });
    await store(fx.url, blocker);
    await waitFor('the blocker attempted', () => receiver.received.length >= 1);
    await storeAll(fx.url, [
      nameEvent({ changedAt: '2020-01-01T00:00:00.000Z' }),
      nameEvent({ changedAt: '2020-01-02T00:00:00.000Z' }),
    ]);
    // Deleted by the job (queued or not yet): only the blocker stays pending.
    await waitFor('the old ones deleted', async () => {
      const rows = await fx.db.query<{ count: number }>(
        "SELECT count(*)::int AS count FROM name_change_events WHERE changed_at < '2021-01-01'",
      );
      return rows[0].count === 0;
    });
    expect((await statusOf(fx.url, id)).pending).toBe(1);
    receiver.answer = () => ({ status: 200 });
    const sentinel = nameEvent({ changedAt: recent });
    await store(fx.url, sentinel);
    await waitFor('the sentinel', () => receiver.data.some((d) => d.userId === sentinel.userId), {
      timeoutMs: 20_000,
    });
    const names = new Set(receiver.data.map((d) => d.userId));
    expect([...names]).toEqual([blocker.userId, sentinel.userId]);
  }, 30_000);
});
