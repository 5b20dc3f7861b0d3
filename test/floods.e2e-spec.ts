import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { EventStreamService } from '../src/events/event-stream.service.js';
import { redisEnv, startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { http, post } from './support/http.js';
import { waitFor } from './support/ports.js';
import {
  collectGarbage,
  spyOnProcessFailures,
  type ProcessSpies,
} from './support/process-spies.js';
import { rawCommand } from './support/redis-server.js';
import { REDIS_URL } from './support/environment.js';
import { settle, SseStream } from './support/sse.js';

const LISTEN = '/api/webhooks/prevnames/listen';
const PUBLISH = '/api/webhooks/prevnames';
const LISTEN_REQUEST = `GET ${LISTEN} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`;

const STORM_SIZE = 2_000;
const STORM_ROUNDS = 4;
/** Connections opened at once: more than the listen backlog would be dropped and retried. */
const STORM_BATCH = 250;
/** Heap growth allowed over the measured storm rounds (8,000 connections), after a full GC. */
const HEAP_BOUND_BYTES = 4 * 1024 * 1024;

type Drop = 'partial request' | 'before the answer' | 'live, reset' | 'live, closed';
const DROPS: Drop[] = ['partial request', 'before the answer', 'live, reset', 'live, closed'];

/**
 * One raw client of the storm. Depending on `drop` it sends half a request, or a whole one,
 * or waits until it is a live listener (the `retry:` frame arrived); `drop()` then resets or
 * closes the connection without a word.
 */
function stormClient(port: number, drop: Drop): Promise<{ socket: net.Socket; live: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    socket.on('error', () => undefined);
    const timer = setTimeout(() => reject(new Error(`storm client (${drop}) stuck`)), 30_000);
    const done = (live: boolean) => {
      clearTimeout(timer);
      resolve({ socket, live });
    };
    socket.once('connect', () => {
      if (drop === 'partial request') {
        socket.write(LISTEN_REQUEST.slice(0, 30), () => done(false));
        return;
      }
      if (drop === 'before the answer') {
        socket.write(LISTEN_REQUEST, () => done(false));
        return;
      }
      socket.write(LISTEN_REQUEST);
      let received = '';
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString();
        if (received.includes('\r\n\r\nretry: ') || /\r\n\r\n[\s\S]*retry: /.test(received)) {
          done(true);
        } else if (/^HTTP\/1\.1 (?!200)/.test(received)) {
          reject(new Error(`storm listener refused: ${received}`));
        }
      });
    });
  });
}

async function storm(port: number): Promise<{ live: number; clients: net.Socket[] }> {
  const clients: { socket: net.Socket; live: boolean; drop: Drop }[] = [];
  for (let start = 0; start < STORM_SIZE; start += STORM_BATCH) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(STORM_BATCH, STORM_SIZE - start) }, async (_, i) => {
        const drop = DROPS[(start + i) % DROPS.length];
        const client = await stormClient(port, drop);
        // The early ones go at once, while the server is still working on their request.
        if (!client.live) client.socket.resetAndDestroy();
        return { ...client, drop };
      }),
    );
    clients.push(...batch);
  }
  return { live: clients.filter((c) => c.live).length, clients: clients.map((c) => c.socket) };
}

describe('floods: a connection storm, a listener that stops reading, the listener cap', () => {
  let db: TestDatabase;
  let app: TestApp;
  let port: number;
  let spies: ProcessSpies;
  let prefix: string;
  const streams: SseStream[] = [];
  const listeners = () => app.app.get(EventStreamService).listenerCount;
  const openSockets = () =>
    new Promise<number>((resolve, reject) =>
      (app.app.getHttpServer() as Server).getConnections((error, count) =>
        error ? reject(error) : resolve(count),
      ),
    );
  const subscribers = async () => {
    const reply = await rawCommand(
      Number(new URL(REDIS_URL).port || 6379),
      ['PUBSUB', 'NUMSUB', `${prefix}:name-events`],
      new URL(REDIS_URL).hostname,
    );
    return Number(reply.split('\r\n').at(-1)!.replace(/^:/, ''));
  };

  beforeAll(async () => {
    spies = spyOnProcessFailures();
    db = await TestDatabase.create();
    const env = redisEnv(db.url);
    prefix = env.REDIS_KEY_PREFIX;
    app = await startApp({ ...env, SSE_BUFFER_LIMIT_BYTES: '16384' });
    port = Number(new URL(app.url).port);
  });

  afterEach(() => {
    for (const stream of streams.splice(0)) stream.close();
  });

  afterAll(async () => {
    spies?.stop();
    await app?.close();
    await db?.drop();
  });

  it(`storms ${STORM_ROUNDS} × ${STORM_SIZE} listeners that drop abruptly: no listener, socket, subscription or heap left behind`, async () => {
    // Every SSE response the server makes, weakly: each must be collectable afterwards.
    const responses: WeakRef<ServerResponse>[] = [];
    const track = (req: IncomingMessage, res: ServerResponse) => {
      if (req.url?.startsWith(LISTEN)) responses.push(new WeakRef(res));
    };
    const server = app.app.getHttpServer() as Server;
    server.on('request', track);
    const heap: number[] = [];
    try {
      expect(listeners()).toBe(0);
      for (let round = 1; round <= STORM_ROUNDS; round++) {
        const { live, clients } = await storm(port);
        expect(live).toBe(STORM_SIZE / 2);
        // Those dropped before the answer may not be counted out yet.
        expect(listeners()).toBeGreaterThanOrEqual(live);
        expect(await subscribers()).toBe(1);
        for (const [i, socket] of clients.entries()) {
          if (i % 2) socket.destroy();
          else socket.resetAndDestroy();
        }
        await waitFor(
          `round ${round}: the listener count back to 0`,
          () => {
            if (listeners() !== 0) throw new Error(`${listeners()} listener(s) still counted`);
            return true;
          },
          { timeoutMs: 30_000 },
        );
        await waitFor(
          `round ${round}: no server socket left`,
          async () => (await openSockets()) === 0,
          {
            timeoutMs: 30_000,
          },
        );
        await waitFor(
          `round ${round}: the Redis subscription dropped`,
          async () => (await subscribers()) === 0,
        );
        await settle(50);
        collectGarbage();
        await settle(50);
        collectGarbage();
        heap.push(process.memoryUsage().heapUsed);
      }
      const alive = responses.filter((ref) => ref.deref() !== undefined).length;
      expect(responses.length).toBeGreaterThanOrEqual((STORM_SIZE * STORM_ROUNDS) / 2);
      expect(alive).toBe(0);
      // Round 1 warms up (JIT, pools, caches); after it the heap stays within the bound.
      const growth = Math.max(...heap.slice(1)) - heap[0];
      process.stderr.write(
        `heap after each round (MB): ${heap.map((h) => (h / 2 ** 20).toFixed(1)).join(', ')}\n`,
      );
      expect(growth).toBeLessThan(HEAP_BOUND_BYTES);
    } finally {
      server.off('request', track);
    }

    // The instance still works.
    const stream = await SseStream.open(`${app.url}${LISTEN}`);
    streams.push(stream);
    expect(stream.status).toBe(200);
    expect(listeners()).toBe(1);
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  }, 240_000);

  it('cuts off a listener that stops reading past SSE_BUFFER_LIMIT_BYTES, while another keeps receiving promptly', async () => {
    const userId = `slow-${randomBytes(4).toString('hex')}`;
    const healthy = await SseStream.open(`${app.url}${LISTEN}?userId=${userId}`);
    streams.push(healthy);
    expect(healthy.status).toBe(200);

    // A raw client that reads the head and the retry frame, then never reads again.
    const slow = net.connect({ port, host: '127.0.0.1' });
    slow.on('error', () => undefined);
    const head: Buffer[] = [];
    await new Promise<void>((resolve) => {
      const onData = (chunk: Buffer) => {
        head.push(chunk);
        if (Buffer.concat(head).includes('retry: ')) {
          slow.off('data', onData);
          slow.pause();
          resolve();
        }
      };
      slow.on('data', onData);
      slow.write(`GET ${LISTEN}?userId=${userId} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    });
    expect(listeners()).toBe(2);

    // 256-character names, each character escaped by JSON to six bytes: ~1.9 KB frames. The
    // kernel buffers several MB of a stalled loopback socket before the server sees it.
    const name = (n: number) => `${n}`.padEnd(256, '\u0001');
    const latencies: number[] = [];
    let published = 0;
    const BATCH = 10;
    const MAX_EVENTS = 8_000;
    while (listeners() === 2 && published < MAX_EVENTS) {
      const batch = Array.from({ length: BATCH }, (_, i) => published + i);
      published += BATCH;
      const answered = await Promise.all(
        batch.map(async (n) => {
          const res = await post(`${app.url}${PUBLISH}`, {
            userId,
            type: 'displayname',
            name: name(n),
            changedAt: new Date(Date.UTC(2024, 0, 1) + n * 1000).toISOString(),
          });
          expect(res.status).toBe(200);
          return Date.now();
        }),
      );
      await healthy.untilEvents(published, 10_000);
      const arrived = Date.now();
      for (const at of answered) latencies.push(arrived - at);
    }
    expect(listeners()).toBe(1);
    expect(published).toBeLessThan(MAX_EVENTS);

    // The healthy listener got every event, in order, each within a bound of its answer.
    expect(healthy.events.map((e) => (e.data as { name: string }).name)).toEqual(
      Array.from({ length: published }, (_, n) => name(n)),
    );
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.floor(latencies.length * 0.99)];
    process.stderr.write(
      `slow listener cut after ${published} events (${healthy.raw.length} bytes); healthy listener latency p50 ${latencies[latencies.length >> 1]} ms, p99 ${p99} ms, max ${latencies.at(-1)} ms\n`,
    );
    expect(p99).toBeLessThan(1_000);
    expect(latencies.at(-1)).toBeLessThan(5_000);

    // What the slow client had is a byte-for-byte prefix of the healthy stream, then the end.
    const rest: Buffer[] = [];
    slow.on('data', (chunk: Buffer) => rest.push(chunk));
    const closed = new Promise((resolve) => slow.once('close', resolve));
    slow.resume();
    await closed;
    const all = Buffer.concat([...head, ...rest]);
    const body = all.subarray(all.indexOf('\r\n\r\n') + 4).toString('utf8');
    const frames = dechunkedText(body);
    expect(frames.length).toBeGreaterThan(16_384);
    expect(frames.length).toBeLessThan(Buffer.byteLength(healthy.raw));
    expect(healthy.raw.startsWith(frames)).toBe(true);

    // It can reconnect with the last id it has and replay the rest.
    const lastId = [...frames.matchAll(/^id: (\d+)$/gm)].at(-1)?.[1] ?? '0';
    const resumed = await SseStream.open(`${app.url}${LISTEN}?userId=${userId}`, {
      'Last-Event-ID': lastId,
    });
    streams.push(resumed);
    await resumed.untilEvents(published - [...frames.matchAll(/^id: /gm)].length + 1);
    expect(resumed.events.at(-1)!.data).toEqual(healthy.events.at(-1)!.data);
    // A replay far larger than the bound (all of it, ~4.6 MB) is not a slow listener.
    const fromStart = await SseStream.open(`${app.url}${LISTEN}?userId=${userId}`, {
      'Last-Event-ID': '0',
    });
    streams.push(fromStart);
    await fromStart.untilEvents(published, 60_000);
    expect(fromStart.events).toEqual(healthy.events);
    const metrics = await http(`${app.url}/api/metrics`);
    expect(metrics.text).toMatch(/^name_history_slow_listeners_disconnected_total 1$/m);
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  }, 180_000);
});

describe('floods: the listener cap (SSE_MAX_LISTENERS)', () => {
  let db: TestDatabase;
  let app: TestApp;
  const streams: SseStream[] = [];

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp({ ...redisEnv(db.url), SSE_MAX_LISTENERS: '3' });
  });

  afterEach(() => {
    for (const stream of streams.splice(0)) stream.close();
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('answers 503 {message, code} past the cap, to a burst too, and admits again once one leaves', async () => {
    const burst = await Promise.all(
      Array.from({ length: 20 }, () => SseStream.open(`${app.url}${LISTEN}`)),
    );
    streams.push(...burst);
    const admitted = burst.filter((s) => s.status === 200);
    const refused = burst.filter((s) => s.status !== 200);
    expect(admitted).toHaveLength(3);
    expect(refused).toHaveLength(17);
    for (const stream of refused) {
      expect(stream.status).toBe(503);
      expect(stream.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(JSON.parse(await stream.body())).toEqual({
        message: 'Too many listeners on this instance',
        code: 503,
      });
    }
    const count = () => app.app.get(EventStreamService).listenerCount;
    expect(count()).toBe(3);

    admitted[0].close();
    await waitFor('a listener to leave', () => count() === 2);
    const next = await SseStream.open(`${app.url}${LISTEN}`);
    streams.push(next);
    expect(next.status).toBe(200);
    const over = await SseStream.open(`${app.url}${LISTEN}`);
    streams.push(over);
    expect(over.status).toBe(503);
    expect(count()).toBe(3);
  });
});

describe('floods: stopping with listeners that stopped reading', () => {
  let db: TestDatabase;
  let app: TestApp | undefined;

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp({ ...redisEnv(db.url), SSE_BUFFER_LIMIT_BYTES: '16384' });
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('does not wait on one stalled mid-replay: the instance stops in seconds, other streams end cleanly', async () => {
    const started = app!;
    const port = Number(new URL(started.url).port);
    // ~9 MB of stored events (seeded directly: 6,000 POSTs would only make the test slow),
    // more than the kernel buffers of a loopback connection take.
    await db.query(
      `INSERT INTO name_change_events (user_id, type, name, changed_at)
       SELECT 'stalled', 'username', repeat(chr(1), 250) || g, timestamp '2024-01-01' + g * interval '1 second'
         FROM generate_series(1, 6000) AS g`,
    );
    const healthy = await SseStream.open(`${started.url}${LISTEN}`);
    expect(healthy.status).toBe(200);

    // A client that stops reading in the middle of its replay: the server waits on it.
    const stalledResponse = new Promise<ServerResponse>((resolve) => {
      const server = started.app.getHttpServer() as Server;
      const onRequest = (req: IncomingMessage, res: ServerResponse) => {
        if (req.url !== `${LISTEN}?userId=stalled`) return;
        server.off('request', onRequest);
        resolve(res);
      };
      server.on('request', onRequest);
    });
    const replaying = net.connect({ port, host: '127.0.0.1' });
    replaying.on('error', () => undefined);
    replaying.write(
      `GET ${LISTEN}?userId=stalled HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: 0\r\n\r\n`,
    );
    replaying.pause();
    const service = started.app.get(EventStreamService);
    const response = await stalledResponse;
    await waitFor('the replay to wait for a reader', () => response.socket?.writableNeedDrain);
    expect(service.listenerCount).toBe(2);

    const closedAt = Date.now();
    let closed = false;
    const closing = started.app.close().then(() => (closed = true));
    await waitFor('the instance to stop', () => closed, { timeoutMs: 10_000 });
    await closing;
    app = undefined;
    expect(Date.now() - closedAt).toBeLessThan(5_000);
    await healthy.until((s) => s.ended);
    expect(healthy.response.complete).toBe(true);
    replaying.destroy();
  }, 60_000);
});

describe('floods: the replay window keeps the newest events, in id order', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp({ ...redisEnv(db.url), SSE_REPLAY_LIMIT: '5' });
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('replays ids 8-12 of 12 (not "5"-"9", as text would sort them)', async () => {
    const userId = `window-${randomBytes(4).toString('hex')}`;
    const keeper = await SseStream.open(`${app.url}${LISTEN}?userId=${userId}`);
    try {
      for (let n = 1; n <= 12; n++) {
        const res = await post(`${app.url}${PUBLISH}`, {
          userId,
          type: 'username',
          name: `w${n}`,
          changedAt: new Date(Date.UTC(2024, 0, 1) + n * 1000).toISOString(),
        });
        expect(res.status).toBe(200);
      }
      const ids = (
        await db.query<{ id: string }>(
          'SELECT id::text AS id FROM name_change_events WHERE user_id = $1 ORDER BY name_change_events.id',
          [userId],
        )
      ).map((r) => r.id);
      expect(ids).toEqual(Array.from({ length: 12 }, (_, i) => String(i + 1)));
      const replay = await SseStream.open(`${app.url}${LISTEN}?userId=${userId}`, {
        'Last-Event-ID': '0',
      });
      try {
        await replay.untilEvents(5);
        await settle(100);
        expect(replay.events.map((e) => e.id)).toEqual(['8', '9', '10', '11', '12']);
        expect(replay.events.map((e) => (e.data as { name: string }).name)).toEqual([
          'w8',
          'w9',
          'w10',
          'w11',
          'w12',
        ]);
      } finally {
        replay.close();
      }
    } finally {
      keeper.close();
    }
  });
});

/** The text of a chunked HTTP body, as far as it goes (it may be cut mid-chunk). */
function dechunkedText(body: string): string {
  let text = '';
  let offset = 0;
  for (;;) {
    const lineEnd = body.indexOf('\r\n', offset);
    if (lineEnd === -1) break;
    const size = parseInt(body.slice(offset, lineEnd), 16);
    if (!size) break;
    text += body.slice(lineEnd + 2, lineEnd + 2 + size);
    offset = lineEnd + 2 + size + 2;
  }
  return text;
}
