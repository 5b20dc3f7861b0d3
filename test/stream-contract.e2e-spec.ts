import { EventSource } from 'eventsource';
import { JSON_TYPE, LISTEN, NO_LISTENERS, PUBLISHED } from './support/api.js';
import { STREAM_BACKENDS, useApp } from './support/app.js';
import { historyEntry, nameEvent } from './support/events.js';
import { http } from './support/http.js';
import { opening, STREAM_CACHE_CONTROL } from './support/sse.js';

/** What a listener sees of one instance: headers, bytes, filtering, keep-alives. */
describe.each(STREAM_BACKENDS)('the stream of one instance, on $name', ({ backend }) => {
  const fx = useApp({ backend, env: { SSE_KEEPALIVE_MS: '1000' } });

  it('streams a published event with the contract headers and exact bytes', async () => {
    const stream = await fx.listen();
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream');
    expect(stream.headers['cache-control']).toBe(STREAM_CACHE_CONTROL);
    expect(stream.headers['connection']).toBe('keep-alive');
    expect(stream.headers['x-accel-buffering']).toBe('no');
    expect(stream.headers['content-encoding']).toBeUndefined();
    await stream.until((s) => s.raw.length > 0);
    const start = /^\nid: (\d+)\nretry: 3000\n\n$/.exec(stream.raw);
    expect(start).not.toBeNull();
    const startId = start![1];

    const body = nameEvent({ changedAt: '2024-06-07T17:30:00+02:00' });
    const res = await fx.publish(body);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(JSON_TYPE);
    expect(res.body).toEqual(PUBLISHED);
    await stream.untilEvents(1);
    const [{ id }] = stream.events;
    expect(BigInt(id!)).toBeGreaterThan(BigInt(startId));
    expect(stream.raw).toBe(
      `${opening(startId)}id: ${id}\ndata: {"userId":"${body.userId}","type":"username","name":"${body.name}","changedAt":"2024-06-07T15:30:00.000Z"}\n\n`,
    );
    expect((await fx.history(body.userId)).body.prevnames).toEqual([
      { type: 'username', name: body.name, changedAt: '2024-06-07T15:30:00.000Z' },
    ]);
  });

  it('answers HEAD with the stream headers and no stream', async () => {
    const res = await http(`${fx.url}${LISTEN}`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.text).toBe('');
  });

  it('answers 500 when nobody listens, and stores the event all the same', async () => {
    await fx.untilNobodyListens();
    const body = nameEvent();
    const res = await fx.publish(body);
    expect(res.status).toBe(500);
    expect(res.body).toEqual(NO_LISTENERS);
    expect((await fx.history(body.userId)).body.prevnames).toEqual([historyEntry(body)]);
  });

  it('stores a repeat once and broadcasts it again with its original id', async () => {
    const body = nameEvent();
    const stream = await fx.listen(`?userId=${body.userId}`);
    expect((await fx.publish(body)).status).toBe(200);
    expect((await fx.publish({ ...body, changedAt: '2024-06-07T16:30:00+01:00' })).status).toBe(
      200,
    );
    await stream.untilEvents(2);
    const [first, second] = stream.events;
    expect(second).toEqual(first);
    expect((await fx.history(body.userId)).body.prevnames).toHaveLength(1);
  });

  it('round-trips hostile names byte-for-byte through the stream and the history', async () => {
    const names = [
      'two\nlines',
      '\n\ndata: injected',
      'id: 999\r\nretry: 1',
      'quote " \\ \'',
      'emoji 😀👨‍👩‍👧',
      ' spaced ',
    ];
    const { userId } = nameEvent();
    const stream = await fx.listen(`?userId=${encodeURIComponent(userId)}`);
    for (const [i, name] of names.entries()) {
      const res = await fx.publish({
        userId,
        type: 'displayname',
        name,
        changedAt: `2024-01-0${i + 1}T00:00:00.000Z`,
      });
      expect(res.status).toBe(200);
    }
    expect((await fx.history(userId)).body.prevnames.map((p) => p.name)).toEqual(names);
    const sentinel = await fx.sentinel([stream]);
    expect(stream.events.map((e) => (e.data as { name: string }).name)).toEqual([
      ...names,
      sentinel.data.name,
    ]);
    expect(stream.messages.filter((m) => m.data !== undefined)).toHaveLength(names.length + 1);
  });

  it('filters to one user with ?userId=', async () => {
    const mine = nameEvent();
    const stream = await fx.listen(`?userId=${encodeURIComponent(mine.userId)}`);
    const everyone = await fx.listen();
    const other = nameEvent();
    expect((await fx.publish(other)).status).toBe(200);
    expect((await fx.publish(mine)).status).toBe(200);
    const sentinel = await fx.sentinel([stream, everyone]);
    expect(stream.events.map((e) => e.data)).toEqual([mine, sentinel.data]);
    expect(everyone.events.map((e) => e.data)).toEqual([other, mine, sentinel.data]);
  });

  it('sends keep-alive comments on an idle stream', async () => {
    const stream = await fx.listen(`?userId=${nameEvent().userId}`);
    await stream.until(
      (s) => s.messages.filter((m) => m.comments.includes('keep-alive')).length >= 2,
      4_000,
    );
    expect(stream.raw).toMatch(/^\nid: \d+\nretry: 3000\n\n: keep-alive\n\n: keep-alive\n\n/);
  });

  it('works with an EventSource client', async () => {
    const body = nameEvent();
    const source = new EventSource(`${fx.url}${LISTEN}?userId=${encodeURIComponent(body.userId)}`);
    try {
      await new Promise<void>((resolve, reject) => {
        source.onopen = () => resolve();
        source.onerror = () => reject(new Error('EventSource failed to open'));
      });
      const received = new Promise<MessageEvent>((resolve) => {
        source.onmessage = resolve;
      });
      expect((await fx.publish(body)).status).toBe(200);
      const message = await received;
      expect(JSON.parse(message.data as string)).toEqual(body);
      expect(message.lastEventId).toMatch(/^\d+$/);
    } finally {
      source.close();
    }
  });

  it('rejects a malformed Last-Event-ID or query with a 400 before streaming', async () => {
    const header = await fx.listen('', { 'Last-Event-ID': 'abc' });
    expect(header.status).toBe(400);
    expect(header.headers['content-type']).toBe(JSON_TYPE);
    expect(JSON.parse(await header.body())).toEqual({
      message: 'Last-Event-ID must be a stored event id (a non-negative integer)',
      code: 400,
    });
    const query = await fx.listen('?lastEventId=-1');
    expect(query.status).toBe(400);
    expect(JSON.parse(await query.body())).toEqual({
      message: 'lastEventId must be a stored event id (a non-negative integer)',
      code: 400,
    });
    const user = await fx.listen(`?userId=${'u'.repeat(65)}`);
    expect(user.status).toBe(400);
    expect(JSON.parse(await user.body())).toEqual({
      message: 'userId must be between 1 and 64 characters long',
      code: 400,
    });
  });
});
