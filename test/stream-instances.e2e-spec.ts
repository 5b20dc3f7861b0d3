import {
  BUS_DOWN,
  JSON_TYPE,
  NO_LISTENERS,
  PUBLISH,
  PUBLISHED,
  STREAM_FAILED,
} from './support/api.js';
import { useApp, type TestApp } from './support/app.js';
import { historyEntry, nameEvent, type NameEventBody } from './support/events.js';
import { http, post } from './support/http.js';

/** Instances share events through Redis: a listener anywhere hears a POST anywhere. */
describe('publish and listen across two instances (Redis)', () => {
  const fx = useApp();
  let a: TestApp;
  let b: TestApp;
  const publishTo = (instance: TestApp, body: NameEventBody) =>
    post(`${instance.url}${PUBLISH}`, body);

  beforeAll(async () => {
    a = fx.instance;
    b = await fx.startInstance();
  });

  it('delivers a POST to A to the listeners of A and B exactly once', async () => {
    const onA = await fx.listenTo(a);
    const onB = await fx.listenTo(b);
    const body = nameEvent();
    expect((await publishTo(a, body)).status).toBe(200);
    const sentinel = await fx.sentinel([onA, onB]);
    expect(onA.events.map((e) => e.data)).toEqual([body, sentinel.data]);
    expect(onB.events).toEqual(onA.events);
  });

  it('counts a listener on B as a listener for a POST to A', async () => {
    const onB = await fx.listenTo(b);
    const res = await publishTo(a, nameEvent());
    expect(res.status).toBe(200);
    expect(res.body).toEqual(PUBLISHED);
    await onB.untilEvents(1);
  });

  it('answers 500 with no listener on any instance, and the history has the event', async () => {
    await fx.untilNobodyListens();
    const body = nameEvent();
    const res = await publishTo(a, body);
    expect(res.status).toBe(500);
    expect(res.body).toEqual(NO_LISTENERS);
    const history = await http(`${b.url}/api/users/${body.userId}/prevnames`);
    expect(history.body).toEqual({
      userId: body.userId,
      prevnames: [historyEntry(body)],
      code: 200,
    });
  });

  it('keeps 50 racing POSTs over both instances in id order for 20 listeners', async () => {
    const listeners = await Promise.all(
      Array.from({ length: 20 }, (_, i) => fx.listenTo(i % 2 ? a : b)),
    );
    const { userId } = nameEvent();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        publishTo(i % 2 ? a : b, {
          userId,
          type: i % 3 ? 'username' : 'displayname',
          name: `racer-${i}`,
          changedAt: new Date(Date.UTC(2024, 0, 1, 0, 0, i)).toISOString(),
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
    const sentinel = await fx.sentinel(listeners);
    for (const listener of listeners) {
      expect(listener.events.at(-1)).toEqual({ id: sentinel.id, data: sentinel.data });
      const racers = listener.events.slice(0, -1);
      const ids = racers.map((e) => BigInt(e.id!));
      expect(ids).toHaveLength(50);
      for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]);
      expect(new Set(racers.map((e) => (e.data as { name: string }).name)).size).toBe(50);
    }
    const history = await http<{ prevnames: unknown[] }>(`${a.url}/api/users/${userId}/prevnames`);
    expect(history.body.prevnames).toHaveLength(50);
  });

  it('replays across instances: listen on A, reconnect to B with Last-Event-ID', async () => {
    const onA = await fx.listenTo(a);
    const { userId } = nameEvent();
    const event = (i: number): NameEventBody => ({
      userId,
      type: 'username',
      name: `x${i}`,
      changedAt: `2024-04-0${i}T00:00:00.000Z`,
    });
    expect((await publishTo(a, event(1))).status).toBe(200);
    await onA.untilEvents(1);
    const lastId = onA.events[0].id!;
    const keeper = await fx.listenTo(a);
    onA.close();
    for (const i of [2, 3]) expect((await publishTo(a, event(i))).status).toBe(200);
    await keeper.untilEvents(2);
    const onB = await fx.listenTo(b, '', { 'Last-Event-ID': lastId });
    expect((await publishTo(a, event(4))).status).toBe(200);
    await fx.sentinel([onB], event(5));
    expect(onB.events.map((e) => (e.data as { name: string }).name)).toEqual([
      'x2',
      'x3',
      'x4',
      'x5',
    ]);
  });
});

describe('listen with Redis unreachable', () => {
  const fx = useApp({ backend: 'postgres', env: { REDIS_URL: 'redis://127.0.0.1:1' } });

  it('answers 500 with the contract body before any stream byte', async () => {
    const stream = await fx.listen();
    expect(stream.status).toBe(500);
    expect(stream.headers['content-type']).toBe(JSON_TYPE);
    expect(JSON.parse(await stream.body())).toEqual(STREAM_FAILED);
  });

  it('stores a POST, then answers 500 for the delivery', async () => {
    const body = nameEvent();
    const res = await fx.publish(body);
    expect(res.status).toBe(500);
    expect(res.body).toEqual(BUS_DOWN);
    const rows = await fx.db.query('SELECT user_id FROM name_change_events WHERE user_id = $1', [
      body.userId,
    ]);
    expect(rows).toEqual([{ user_id: body.userId }]);
  });
});
