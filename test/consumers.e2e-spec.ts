import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { RedisLeases } from '../src/redis/redis-leases.js';
import { Leases } from '../src/redis/leases.js';
import { NO_LISTENERS, PUBLISH } from './support/api.js';
import { useApp, type AppFixture } from './support/app.js';
import { nameEvent, uniqueUserId, type NameEventBody } from './support/events.js';
import { post } from './support/http.js';
import { metric } from './support/metrics.js';
import { waitFor } from './support/ports.js';
import { admin, ADMIN_TOKEN } from './support/privacy.js';
import {
  ConfiguredRecorder,
  ConfiguredRecorderModule,
  RecordingConsumer,
  RecordingConsumerModule,
} from './support/recording-consumer.js';

const recorder = (fx: { app: AppFixture['app'] }) => fx.app.get(RecordingConsumer);
const fields = ({ userId, type, name, changedAt }: NameEventBody) => ({
  userId,
  type,
  name,
  changedAt,
});

/** Publishes to `url`: nobody listens in these tests, so each is stored and answered so. */
async function publishAll(url: string, bodies: NameEventBody[]): Promise<void> {
  for (const body of bodies) {
    const { status, body: answer } = await post(`${url}${PUBLISH}`, body);
    expect({ status, answer }).toEqual({ status: 500, answer: NO_LISTENERS });
  }
}

describe('a consumer whose options come from its configuration', () => {
  const fx = useApp({ modules: [ConfiguredRecorderModule] });

  it('takes the batch size it was built with over the default', async () => {
    const bodies = Array.from({ length: 3 }, () => nameEvent());
    await publishAll(fx.url, bodies);
    const configured = fx.app.get(ConfiguredRecorder);
    await waitFor('3 events handled', () => configured.handled.length >= 3);
    // By the default (100, gathered for 50 ms) the three would be one batch or two.
    expect(configured.batches.map((batch) => batch.map(fields))).toEqual(
      bodies.map((body) => [fields(body)]),
    );
  });
});

describe('a consumer of the event log (PostgreSQL and Redis)', () => {
  const fx = useApp({ modules: [RecordingConsumerModule], env: { ADMIN_TOKEN } });

  it('gets every stored event once, in id order, in batches, and keeps its position', async () => {
    const bodies = Array.from({ length: 8 }, () => nameEvent());
    await publishAll(fx.url, bodies);
    await waitFor('8 events handled', () => recorder(fx).handled.length >= 8);

    const handled = recorder(fx).handled;
    expect(handled.map(fields)).toEqual(bodies.map(fields));
    const ids = handled.map((event) => BigInt(event.id));
    expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : 1)));
    expect(recorder(fx).batches.every((batch) => batch.length <= 3)).toBe(true);
    // Each batch is told committed, after its transaction.
    await waitFor(
      'every batch told committed',
      () => recorder(fx).committedBatches.length === recorder(fx).batches.length,
    );
    expect(recorder(fx).committedBatches).toEqual(recorder(fx).batches);
    await waitFor('the position saved', async () => {
      const [row] = await fx.db.query<{ position: string }>(
        "SELECT position::text AS position FROM name_event_consumers WHERE name = 'recorder'",
      );
      return row.position === handled.at(-1)!.id;
    });
    expect(await metric(fx.url, 'name_history_consumer_lag_events{consumer="recorder"}')).toBe(0);
    expect(await metric(fx.url, 'name_history_consumer_events_total{consumer="recorder"}')).toBe(8);
  });

  it('tries a failed batch again, the same events, until it succeeds', async () => {
    const before = recorder(fx).handled.length;
    recorder(fx).failures = 2;
    const bodies = [nameEvent(), nameEvent()];
    await publishAll(fx.url, bodies);
    await waitFor(
      'the batch handled after two failures',
      () => recorder(fx).handled.length >= before + 2,
    );
    // Each try starts at the first event not handled (later ones may have joined the batch).
    expect(recorder(fx).failed.map((batch) => fields(batch[0]))).toEqual([
      fields(bodies[0]),
      fields(bodies[0]),
    ]);
    expect(recorder(fx).handled.slice(before).map(fields)).toEqual(bodies.map(fields));
    expect(await metric(fx.url, 'name_history_consumer_failures_total{consumer="recorder"}')).toBe(
      2,
    );
  });

  it('catches up, from its stored position, with what was stored while no instance ran it, minus what was erased', async () => {
    const leases = fx.app.get<Leases, RedisLeases>(Leases);
    const key = leases.keyOf('consumer:recorder');
    const redis = new Redis(fx.env.REDIS_URL!);
    // The lease is let go and taken by "another instance" that does nothing: the consumer
    // stops here, as if its only instance were down.
    await fx.stop();
    await redis.set(key, 'an-instance-that-died', 'PX', 60_000);
    await fx.start();
    const before = recorder(fx).handled.length;
    expect(before).toBe(0);

    const erased = uniqueUserId('erased');
    const kept = [nameEvent(), nameEvent({ userId: erased }), nameEvent()];
    await publishAll(fx.url, kept);
    expect((await admin(fx.url, 'DELETE', `${erased}/prevnames`)).status).toBe(200);
    expect(await metric(fx.url, 'name_history_consumer_lag_events{consumer="recorder"}')).toBe(2);
    expect(recorder(fx).handled).toEqual([]);

    await redis.del(key);
    await waitFor('the two kept events handled', () => recorder(fx).handled.length >= 2);
    expect(recorder(fx).handled.map(fields)).toEqual([kept[0], kept[2]].map(fields));
    await redis.quit();
  });

  it('runs on one instance at a time: another instance takes over when it stops', async () => {
    const other = await fx.startInstance();
    const first = [nameEvent(), nameEvent()];
    await publishAll(fx.url, first);
    await waitFor('both handled on this instance', () =>
      recorder(fx).handled.some((event) => event.userId === first[1].userId),
    );
    const onOther = other.app.get(RecordingConsumer);
    expect(onOther.handled).toEqual([]);

    await fx.stop();
    const second = [nameEvent(), nameEvent()];
    for (const body of second) {
      expect([200, 500]).toContain(
        (
          await fetch(`${other.url}/api/webhooks/prevnames`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
          })
        ).status,
      );
    }
    await waitFor('the other instance to take over', () => onOther.handled.length >= 2);
    expect(onOther.handled.map(fields)).toEqual(second.map(fields));
    await fx.start();
  });
});

describe('a consumer of the event log (the embedded defaults)', () => {
  const fx = useApp({ backend: 'embedded', modules: [RecordingConsumerModule] });

  it('gets every event, and after a restart only what came since', async () => {
    const first = [nameEvent(), nameEvent()];
    await publishAll(fx.url, first);
    await waitFor('both handled', () => recorder(fx).handled.length >= 2);
    expect(recorder(fx).handled.map(fields)).toEqual(first.map(fields));

    await fx.stop();
    await fx.start();
    const second = [nameEvent()];
    await publishAll(fx.url, second);
    await waitFor('the new one handled', () => recorder(fx).handled.length >= 1);
    expect(recorder(fx).handled.map(fields)).toEqual(second.map(fields));
  });
});
