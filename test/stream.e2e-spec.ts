import { EventSource } from 'eventsource';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { redisEnv, startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { http, post } from './support/http.js';
import { waitFor } from './support/ports.js';
import { ThrowawayRedis } from './support/redis-server.js';
import { opening, settle, SseStream, STREAM_CACHE_CONTROL } from './support/sse.js';

const LISTEN = '/api/webhooks/prevnames/listen';
const PUBLISH = '/api/webhooks/prevnames';

let counter = 0;
/** A valid event with a unique user id, so tests never see each other's history. */
function event(overrides: Record<string, unknown> = {}) {
  counter += 1;
  return {
    userId: `user-${counter}-${Date.now()}`,
    type: 'username',
    name: `name-${counter}`,
    changedAt: '2024-06-07T15:30:00.000Z',
    ...overrides,
  };
}

interface Shape {
  name: string;
  start(): Promise<{ app: TestApp; cleanup(): Promise<void> }>;
}

const shapes: Shape[] = [
  {
    name: 'PostgreSQL and Redis',
    start: async () => {
      const db = await TestDatabase.create();
      const app = await startApp({ ...redisEnv(db.url), SSE_KEEPALIVE_MS: '1000' });
      return { app, cleanup: () => db.drop() };
    },
  },
  {
    name: 'the embedded defaults (PGlite, in-process bus)',
    start: async () => {
      const dataDir = await mkdtemp(join(tmpdir(), 'stream-e2e-'));
      const app = await startApp({ DATA_DIR: dataDir, SSE_KEEPALIVE_MS: '1000' });
      return { app, cleanup: () => rm(dataDir, { recursive: true, force: true }) };
    },
  },
];

describe.each(shapes)('publish and listen, one instance, on $name', (shape) => {
  let app: TestApp;
  let cleanup: () => Promise<void>;
  const streams: SseStream[] = [];
  const listen = async (query = '', headers: Record<string, string> = {}) => {
    const stream = await SseStream.open(`${app.url}${LISTEN}${query}`, headers);
    streams.push(stream);
    return stream;
  };
  const historyOf = async (userId: string) =>
    (
      await http<{ prevnames: unknown[] }>(
        `${app.url}/api/users/${encodeURIComponent(userId)}/prevnames`,
      )
    ).body.prevnames;

  beforeAll(async () => {
    ({ app, cleanup } = await shape.start());
  });

  afterEach(() => {
    for (const stream of streams.splice(0)) stream.close();
  });

  afterAll(async () => {
    await app.close();
    await cleanup();
  });

  it('streams a published event with the contract headers and exact bytes', async () => {
    const stream = await listen();
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

    const body = event({ changedAt: '2024-06-07T17:30:00+02:00' });
    const res = await post(`${app.url}${PUBLISH}`, body);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({ success: true });
    await stream.untilEvents(1);
    const [{ id }] = stream.events;
    expect(BigInt(id!)).toBeGreaterThan(BigInt(startId));
    expect(stream.raw).toBe(
      `${opening(startId)}id: ${id}\ndata: {"userId":"${body.userId}","type":"username","name":"${body.name}","changedAt":"2024-06-07T15:30:00.000Z"}\n\n`,
    );
    expect(await historyOf(body.userId)).toEqual([
      { type: 'username', name: body.name, changedAt: '2024-06-07T15:30:00.000Z' },
    ]);
  });

  it('answers HEAD with the stream headers and no stream', async () => {
    const res = await http(`${app.url}${LISTEN}`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    expect(res.text).toBe('');
  });

  it('answers 500 when nobody listens, and stores the event all the same', async () => {
    const body = event();
    const res = await post(`${app.url}${PUBLISH}`, body);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      message: 'Failed to deliver event: no active listeners',
      code: 500,
    });
    expect(await historyOf(body.userId)).toEqual([
      { type: 'username', name: body.name, changedAt: body.changedAt },
    ]);
  });

  it('stores a repeat once and broadcasts it again with its original id', async () => {
    const stream = await listen();
    const body = event();
    expect((await post(`${app.url}${PUBLISH}`, body)).status).toBe(200);
    expect(
      (await post(`${app.url}${PUBLISH}`, { ...body, changedAt: '2024-06-07T16:30:00+01:00' }))
        .status,
    ).toBe(200);
    await stream.untilEvents(2);
    const [first, second] = stream.events;
    expect(second).toEqual(first);
    expect(await historyOf(body.userId)).toHaveLength(1);
  });

  it('round-trips hostile names byte-for-byte through the stream and the history', async () => {
    const stream = await listen();
    const names = [
      'two\nlines',
      '\n\ndata: injected',
      'id: 999\r\nretry: 1',
      'quote " \\ \'',
      'emoji 😀👨‍👩‍👧',
      ' spaced ',
    ];
    const userId = event().userId;
    for (const [i, name] of names.entries()) {
      const res = await post(`${app.url}${PUBLISH}`, {
        userId,
        type: 'displayname',
        name,
        changedAt: `2024-01-0${i + 1}T00:00:00.000Z`,
      });
      expect(res.status).toBe(200);
    }
    await stream.untilEvents(names.length);
    expect(stream.events.map((e) => (e.data as { name: string }).name)).toEqual(names);
    expect(stream.messages.filter((m) => m.data !== undefined)).toHaveLength(names.length);
    expect(((await historyOf(userId)) as { name: string }[]).map((p) => p.name)).toEqual(names);
  });

  it('filters to one user with ?userId=', async () => {
    const mine = event();
    const stream = await listen(`?userId=${encodeURIComponent(mine.userId)}`);
    const everyone = await listen();
    expect((await post(`${app.url}${PUBLISH}`, event())).status).toBe(200);
    expect((await post(`${app.url}${PUBLISH}`, mine)).status).toBe(200);
    await everyone.untilEvents(2);
    await stream.untilEvents(1);
    await settle(100);
    expect(stream.events.map((e) => e.data)).toEqual([mine]);
  });

  it('replays what a client missed after Last-Event-ID, then goes live, without gap or duplicate', async () => {
    const first = await listen();
    const userId = event().userId;
    const publish = (i: number) =>
      post(`${app.url}${PUBLISH}`, {
        userId,
        type: 'username',
        name: `n${i}`,
        changedAt: `2024-03-0${i}T00:00:00.000Z`,
      });
    expect((await publish(1)).status).toBe(200);
    await first.untilEvents(1);
    const lastId = first.events[0].id!;
    first.close();

    const keeper = await listen(); // keeps the instance listening while the client is away
    for (const i of [2, 3, 4]) expect((await publish(i)).status).toBe(200);
    await keeper.untilEvents(3);

    const resumed = await listen(`?userId=${encodeURIComponent(userId)}`, {
      'Last-Event-ID': lastId,
    });
    expect((await publish(5)).status).toBe(200);
    await resumed.untilEvents(4);
    await settle(100);
    expect(resumed.events.map((e) => (e.data as { name: string }).name)).toEqual([
      'n2',
      'n3',
      'n4',
      'n5',
    ]);
    const ids = resumed.events.map((e) => BigInt(e.id!));
    expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : 1)));
    expect(ids[0]).toBeGreaterThan(BigInt(lastId));

    const byQuery = await listen(`?userId=${encodeURIComponent(userId)}&lastEventId=${lastId}`);
    await byQuery.untilEvents(4);
    expect(byQuery.events).toEqual(resumed.events);
  });

  it('gives a new stream its starting id, so a client that never got an event resumes without a gap', async () => {
    const userId = event().userId;
    const first = await listen(`?userId=${encodeURIComponent(userId)}`);
    await first.until((s) => s.messages.length > 0);
    const startId = first.messages[0].id!;
    expect(startId).toMatch(/^\d+$/);
    first.close();

    const keeper = await listen();
    const missed = {
      userId,
      type: 'username',
      name: 'missed',
      changedAt: '2024-05-01T00:00:00.000Z',
    };
    expect((await post(`${app.url}${PUBLISH}`, missed)).status).toBe(200);
    await keeper.untilEvents(1);

    const resumed = await listen(`?userId=${encodeURIComponent(userId)}`, {
      'Last-Event-ID': startId,
    });
    await resumed.untilEvents(1);
    expect(resumed.events.map((e) => e.data)).toEqual([missed]);
    expect(resumed.raw.startsWith(`${opening(startId)}id: `)).toBe(true);
  });

  it('sends keep-alive comments on an idle stream', async () => {
    const stream = await listen(`?userId=${encodeURIComponent(event().userId)}`);
    await stream.until(
      (s) => s.messages.filter((m) => m.comments.includes('keep-alive')).length >= 2,
      4_000,
    );
    expect(stream.raw).toMatch(/^\nid: \d+\nretry: 3000\n\n: keep-alive\n\n: keep-alive\n\n/);
  });

  it('works with an EventSource client', async () => {
    const body = event();
    const source = new EventSource(`${app.url}${LISTEN}?userId=${encodeURIComponent(body.userId)}`);
    try {
      await new Promise<void>((resolve, reject) => {
        source.onopen = () => resolve();
        source.onerror = () => reject(new Error('EventSource failed to open'));
      });
      const received = new Promise<MessageEvent>((resolve) => {
        source.onmessage = resolve;
      });
      expect((await post(`${app.url}${PUBLISH}`, body)).status).toBe(200);
      const message = await received;
      expect(JSON.parse(message.data as string)).toEqual(body);
      expect(message.lastEventId).toMatch(/^\d+$/);
    } finally {
      source.close();
    }
  });

  it('rejects a malformed Last-Event-ID or query with a 400 before streaming', async () => {
    const header = await listen('', { 'Last-Event-ID': 'abc' });
    expect(header.status).toBe(400);
    expect(header.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(await header.body())).toEqual({
      message: 'Last-Event-ID must be a stored event id (a non-negative integer)',
      code: 400,
    });
    const query = await listen('?lastEventId=-1');
    expect(query.status).toBe(400);
    expect(JSON.parse(await query.body())).toEqual({
      message: 'lastEventId must be a stored event id (a non-negative integer)',
      code: 400,
    });
    const user = await listen(`?userId=${'u'.repeat(65)}`);
    expect(user.status).toBe(400);
    expect(JSON.parse(await user.body())).toEqual({
      message: 'userId must be between 1 and 64 characters long',
      code: 400,
    });
  });

  describe('bad input', () => {
    const invalid: [string, unknown, number, string][] = [
      [
        'a missing field',
        { userId: 'u', type: 'username', name: 'n' },
        400,
        'changedAt is required',
      ],
      [
        'a wrong type',
        { userId: 1, type: 'username', name: 'n', changedAt: '2024-06-07T15:30:00Z' },
        400,
        'userId must be a string',
      ],
      [
        'a bad enum',
        { userId: 'u', type: 'nickname', name: 'n', changedAt: '2024-06-07T15:30:00Z' },
        400,
        'type must be one of: username, displayname',
      ],
      [
        'a zone-less date',
        { userId: 'u', type: 'username', name: 'n', changedAt: '2024-06-07T15:30:00' },
        400,
        'changedAt must be an ISO 8601 timestamp with a zone (Z or ±hh:mm), e.g. 2024-06-07T15:30:00.000Z',
      ],
      [
        'an impossible date',
        { userId: 'u', type: 'username', name: 'n', changedAt: '2024-02-30T15:30:00Z' },
        400,
        'changedAt must be an ISO 8601 timestamp with a zone (Z or ±hh:mm), e.g. 2024-06-07T15:30:00.000Z',
      ],
      [
        'an array',
        [{ userId: 'u', type: 'username', name: 'n', changedAt: '2024-06-07T15:30:00Z' }],
        400,
        'Request body must be a JSON object',
      ],
      ['a string', 'hello', 400, 'Request body must be a JSON object'],
      ['null', null, 400, 'Request body must be a JSON object'],
      ['a number', 42, 400, 'Request body must be a JSON object'],
      [
        'an extra property',
        { userId: 'u', type: 'username', name: 'n', changedAt: '2024-06-07T15:30:00Z', extra: 1 },
        400,
        'property extra should not exist',
      ],
      [
        'an empty userId',
        { userId: '', type: 'username', name: 'n', changedAt: '2024-06-07T15:30:00Z' },
        400,
        'userId must be between 1 and 64 characters long',
      ],
      [
        'a 65-character userId',
        { userId: 'u'.repeat(65), type: 'username', name: 'n', changedAt: '2024-06-07T15:30:00Z' },
        400,
        'userId must be between 1 and 64 characters long',
      ],
      [
        'a 257-character name',
        { userId: 'u', type: 'username', name: 'n'.repeat(257), changedAt: '2024-06-07T15:30:00Z' },
        400,
        'name must be between 1 and 256 characters long',
      ],
      [
        'a NUL in the name',
        { userId: 'u', type: 'username', name: 'a\u0000b', changedAt: '2024-06-07T15:30:00Z' },
        400,
        'name must not contain NUL characters or unpaired surrogates',
      ],
      [
        'a prototype key',
        JSON.parse(
          '{"__proto__":{"polluted":true},"userId":"u","type":"username","name":"n","changedAt":"2024-06-07T15:30:00Z"}',
        ),
        400,
        'property __proto__ should not exist',
      ],
    ];

    let watcher: SseStream;
    beforeEach(async () => {
      watcher = await listen();
    });

    it.each(invalid)(
      'rejects %s, storing and broadcasting nothing',
      async (_case, body, status, message) => {
        const res = await http(`${app.url}${PUBLISH}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        expect(res.status).toBe(status);
        expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
        expect(res.body).toEqual({ message, code: status });
        await settle(100);
        expect(watcher.events).toEqual([]);
        expect(await historyOf('u')).toEqual([]);
      },
    );

    it.each([
      [
        'a non-JSON content type',
        { 'content-type': 'text/plain' },
        '{"userId":"u"}',
        415,
        'Content-Type must be application/json',
      ],
      ['no content type', {}, '{"userId":"u"}', 415, 'Content-Type must be application/json'],
      [
        'broken JSON',
        { 'content-type': 'application/json' },
        '{"userId":',
        400,
        'Request body is not valid JSON',
      ],
      [
        'a 20 KiB body',
        { 'content-type': 'application/json' },
        JSON.stringify({
          userId: 'u',
          type: 'username',
          name: 'x'.repeat(20 * 1024),
          changedAt: '2024-06-07T15:30:00Z',
        }),
        413,
        'Request body exceeds the 16 KiB limit',
      ],
    ])('rejects %s', async (_case, headers, body, status, message) => {
      const res = await http(`${app.url}${PUBLISH}`, { method: 'POST', headers, body });
      expect(res.status).toBe(status);
      expect(res.body).toEqual({ message, code: status });
      await settle(100);
      expect(watcher.events).toEqual([]);
      expect(await historyOf('u')).toEqual([]);
    });

    it('rejects a body that is not valid UTF-8', async () => {
      const res = await http(`${app.url}${PUBLISH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: 'Request body is not valid UTF-8', code: 400 });
    });
  });
});

describe('publish and listen across two instances (Redis)', () => {
  let db: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  const streams: SseStream[] = [];
  const listen = async (app: TestApp, headers: Record<string, string> = {}) => {
    const stream = await SseStream.open(`${app.url}${LISTEN}`, headers);
    streams.push(stream);
    return stream;
  };

  beforeAll(async () => {
    db = await TestDatabase.create();
    const env = redisEnv(db.url);
    a = await startApp(env);
    b = await startApp(env);
  });

  afterEach(() => {
    for (const stream of streams.splice(0)) stream.close();
  });

  afterAll(async () => {
    await a.close();
    await b.close();
    await db.drop();
  });

  it('delivers a POST to A to the listeners of A and B exactly once', async () => {
    const onA = await listen(a);
    const onB = await listen(b);
    const body = event();
    expect((await post(`${a.url}${PUBLISH}`, body)).status).toBe(200);
    await onA.untilEvents(1);
    await onB.untilEvents(1);
    await settle(200);
    expect(onA.events.map((e) => e.data)).toEqual([body]);
    expect(onB.events).toEqual(onA.events);
  });

  it('counts a listener on B as a listener for a POST to A', async () => {
    const onB = await listen(b);
    const res = await post(`${a.url}${PUBLISH}`, event());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    await onB.untilEvents(1);
  });

  it('answers 500 with no listener on any instance, and the history has the event', async () => {
    await settle(100); // the previous test's listeners are gone, and so are the subscriptions
    const body = event();
    const res = await post(`${a.url}${PUBLISH}`, body);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      message: 'Failed to deliver event: no active listeners',
      code: 500,
    });
    const history = await http(`${b.url}/api/users/${body.userId}/prevnames`);
    expect(history.body).toEqual({
      userId: body.userId,
      prevnames: [{ type: 'username', name: body.name, changedAt: body.changedAt }],
      code: 200,
    });
  });

  it('keeps 50 racing POSTs over both instances in id order for 20 listeners', async () => {
    const listeners = await Promise.all(
      Array.from({ length: 20 }, (_, i) => listen(i % 2 ? a : b)),
    );
    const userId = event().userId;
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        post(`${(i % 2 ? a : b).url}${PUBLISH}`, {
          userId,
          type: i % 3 ? 'username' : 'displayname',
          name: `racer-${i}`,
          changedAt: new Date(Date.UTC(2024, 0, 1, 0, 0, i)).toISOString(),
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
    for (const listener of listeners) {
      await listener.untilEvents(50);
    }
    await settle(200);
    for (const listener of listeners) {
      const ids = listener.events.map((e) => BigInt(e.id!));
      expect(ids).toHaveLength(50);
      for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]);
      expect(new Set(listener.events.map((e) => (e.data as { name: string }).name)).size).toBe(50);
    }
    const history = await http<{ prevnames: unknown[] }>(`${a.url}/api/users/${userId}/prevnames`);
    expect(history.body.prevnames).toHaveLength(50);
  });

  it('replays across instances: listen on A, reconnect to B with Last-Event-ID', async () => {
    const onA = await listen(a);
    const userId = event().userId;
    const publish = (i: number) =>
      post(`${a.url}${PUBLISH}`, {
        userId,
        type: 'username',
        name: `x${i}`,
        changedAt: `2024-04-0${i}T00:00:00.000Z`,
      });
    expect((await publish(1)).status).toBe(200);
    await onA.untilEvents(1);
    const lastId = onA.events[0].id!;
    const keeper = await listen(a);
    onA.close();
    for (const i of [2, 3]) expect((await publish(i)).status).toBe(200);
    await keeper.untilEvents(2);
    const onB = await listen(b, { 'Last-Event-ID': lastId });
    expect((await publish(4)).status).toBe(200);
    await onB.untilEvents(3);
    await settle(100);
    expect(onB.events.map((e) => (e.data as { name: string }).name)).toEqual(['x2', 'x3', 'x4']);
  });
});

describe('listen with Redis unreachable', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp({ DATABASE_URL: db.url, REDIS_URL: 'redis://127.0.0.1:1' });
  });

  afterAll(async () => {
    await app.close();
    await db.drop();
  });

  it('answers 500 with the contract body before any stream byte', async () => {
    const stream = await SseStream.open(`${app.url}${LISTEN}`);
    expect(stream.status).toBe(500);
    expect(stream.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(await stream.body())).toEqual({
      message: 'Error establishing the event stream connection',
      code: 500,
    });
  });

  it('stores a POST, then answers 500 for the delivery', async () => {
    const body = event();
    const res = await post(`${app.url}${PUBLISH}`, body);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      message: 'Failed to deliver event: event bus unavailable',
      code: 500,
    });
    const rows = await db.query('SELECT user_id FROM name_change_events WHERE user_id = $1', [
      body.userId,
    ]);
    expect(rows).toEqual([{ user_id: body.userId }]);
  });
});

describe('an event stored and not yet broadcast (PUBLISH held by CLIENT PAUSE)', () => {
  let db: TestDatabase;
  let redis: ThrowawayRedis;
  let app: TestApp;
  const streams: SseStream[] = [];

  beforeAll(async () => {
    db = await TestDatabase.create();
    // A Redis of this test's own: CLIENT PAUSE would hold every other test file's PUBLISH too.
    redis = await ThrowawayRedis.start();
    app = await startApp({ ...redisEnv(db.url), REDIS_URL: redis.url });
  });

  afterAll(async () => {
    for (const stream of streams) stream.close();
    await app.close();
    await redis.kill();
    await db.drop();
  });

  const listen = async (headers: Record<string, string> = {}) => {
    const stream = await SseStream.open(`${app.url}${LISTEN}`, headers);
    streams.push(stream);
    expect(stream.status).toBe(200);
    return stream;
  };
  const frame = (id: string, body: object) => `id: ${id}\ndata: ${JSON.stringify(body)}\n\n`;
  /**
   * POSTs `body` with PUBLISH held by Redis; resolves once it is stored, with its answer still
   * to come (wrapped: an async function would wait for it).
   */
  const postHeld = async (body: { userId: string }) => {
    expect(await redis.command('CLIENT', 'PAUSE', '5000', 'WRITE')).toBe('+OK');
    const answer = post(`${app.url}${PUBLISH}`, body);
    await waitFor('the held event to be stored', async () => {
      const rows = await db.query('SELECT 1 FROM name_change_events WHERE user_id = $1', [
        body.userId,
      ]);
      return rows.length === 1;
    });
    return { answer };
  };

  it('reaches a client resuming with Last-Event-ID once, in the replay', async () => {
    const keeper = await listen();
    const [first, second, third] = [event(), event(), event()];
    expect((await post(`${app.url}${PUBLISH}`, first)).status).toBe(200);
    await keeper.untilEvents(1);
    const firstId = keeper.events[0].id!;

    // With PUBLISH held by Redis, the second event is stored and not yet broadcast...
    const { answer } = await postHeld(second);
    // ...when a client resumes after the first: its replay has the second.
    const resumed = await listen({ 'Last-Event-ID': firstId });
    await resumed.untilEvents(1);
    const secondId = resumed.events[0].id!;

    // The broadcast of the second then arrives live, and must not reach the client again.
    expect(await redis.command('CLIENT', 'UNPAUSE')).toBe('+OK');
    expect((await answer).status).toBe(200);
    await keeper.untilEvents(2);
    expect((await post(`${app.url}${PUBLISH}`, third)).status).toBe(200);
    await keeper.untilEvents(3);
    await resumed.untilEvents(2);
    await settle(200);
    const thirdId = keeper.events[2].id!;
    expect(resumed.raw).toBe(
      `${opening(firstId)}${frame(secondId, second)}${frame(thirdId, third)}`,
    );
    expect(BigInt(secondId)).toBe(BigInt(firstId) + 1n);
    expect(BigInt(thirdId)).toBe(BigInt(secondId) + 1n);
  });

  it('reaches a new client right behind its starting id, so leaving then and resuming misses nothing', async () => {
    const keeper = await listen();
    const [held, next] = [event(), event()];

    const { answer } = await postHeld(held);
    // A new client, with no id yet, that leaves as soon as it has read anything at all. Its
    // starting id must not name the held event before the event itself has gone out to it.
    const leaving = listen().then(async (stream) => {
      await stream.until((s) => s.messages.length > 0);
      stream.close();
      return stream;
    });
    await settle(300);
    expect(await redis.command('CLIENT', 'UNPAUSE')).toBe('+OK');
    expect((await answer).status).toBe(200);
    await keeper.untilEvents(1);
    const heldId = keeper.events[0].id!;
    const left = await leaving;
    expect(left.raw).toBe(`${opening(heldId)}${frame(heldId, held)}`);

    // Resuming from the last id it read, it gets what came after, and nothing twice.
    const lastRead = left.messages.at(-1)!.id!;
    const resumed = await listen({ 'Last-Event-ID': lastRead });
    expect((await post(`${app.url}${PUBLISH}`, next)).status).toBe(200);
    await keeper.untilEvents(2);
    await resumed.untilEvents(1);
    await settle(200);
    expect(resumed.raw).toBe(`${opening(lastRead)}${frame(keeper.events[1].id!, next)}`);
  });
});
