import type { IncomingMessage, ServerResponse } from 'node:http';
import net from 'node:net';
import { LISTEN } from './support/api.js';
import { useApp } from './support/app.js';
import { REDIS_URL } from './support/environment.js';
import { waitFor } from './support/ports.js';
import { collectGarbage, spyOnEachTest } from './support/process-spies.js';
import { rawCommand } from './support/redis-protocol.js';

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

/**
 * The heap after a full collection, with the process at rest: once more after one turn of
 * the event loop, which ends the current job (objects a WeakRef was read from in it are held
 * until then) and runs the callbacks already due.
 */
async function heapAtRest(): Promise<number> {
  collectGarbage();
  await new Promise((resolve) => setImmediate(resolve));
  collectGarbage();
  return process.memoryUsage().heapUsed;
}

describe('floods: a connection storm', () => {
  const fx = useApp();
  const spies = spyOnEachTest();
  const openSockets = () =>
    new Promise<number>((resolve, reject) =>
      fx.app
        .getHttpServer()
        .getConnections((error, count) => (error ? reject(error) : resolve(count))),
    );
  const subscribers = async () => {
    const reply = await rawCommand(
      Number(new URL(REDIS_URL).port || 6379),
      ['PUBSUB', 'NUMSUB', `${fx.env.REDIS_KEY_PREFIX}:name-events`],
      new URL(REDIS_URL).hostname,
    );
    return Number(reply.split('\r\n').at(-1)!.replace(/^:/, ''));
  };

  it(`storms ${STORM_ROUNDS} × ${STORM_SIZE} listeners that drop abruptly: no listener, socket, subscription or heap left behind`, async () => {
    await fx.untilNobodyListens();
    // Every SSE response the server makes, weakly: each must be collectable afterwards.
    const responses: WeakRef<ServerResponse>[] = [];
    const track = (req: IncomingMessage, res: ServerResponse) => {
      if (req.url?.startsWith(LISTEN)) responses.push(new WeakRef(res));
    };
    const server = fx.app.getHttpServer();
    server.on('request', track);
    const heap: number[] = [];
    try {
      expect(fx.listenerCount()).toBe(0);
      for (let round = 1; round <= STORM_ROUNDS; round++) {
        const { live, clients } = await storm(fx.port);
        expect(live).toBe(STORM_SIZE / 2);
        // Those dropped before the answer may not be counted out yet.
        expect(fx.listenerCount()).toBeGreaterThanOrEqual(live);
        expect(await subscribers()).toBe(1);
        for (const [i, socket] of clients.entries()) {
          if (i % 2) socket.destroy();
          else socket.resetAndDestroy();
        }
        await waitFor(
          `round ${round}: the listener count back to 0`,
          () => {
            const left = fx.listenerCount();
            if (left !== 0) throw new Error(`${left} listener(s) still counted`);
            return true;
          },
          { timeoutMs: 30_000 },
        );
        await waitFor(
          `round ${round}: no server socket left`,
          async () => (await openSockets()) === 0,
          { timeoutMs: 30_000 },
        );
        await waitFor(
          `round ${round}: the Redis subscription dropped`,
          async () => (await subscribers()) === 0,
        );
        heap.push(await heapAtRest());
      }
      expect(responses.length).toBeGreaterThanOrEqual((STORM_SIZE * STORM_ROUNDS) / 2);
      await heapAtRest();
      const alive = responses.filter((ref) => ref.deref() !== undefined).length;
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
    const stream = await fx.listen();
    expect(stream.status).toBe(200);
    expect(fx.listenerCount()).toBe(1);
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  }, 240_000);
});

describe('floods: the listener cap (SSE_MAX_LISTENERS)', () => {
  const fx = useApp({ env: { SSE_MAX_LISTENERS: '3' } });

  it('answers 503 {message, code} past the cap, to a burst too, and admits again once one leaves', async () => {
    await fx.untilNobodyListens();
    const burst = await Promise.all(Array.from({ length: 20 }, () => fx.listen()));
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
    expect(fx.listenerCount()).toBe(3);

    admitted[0].close();
    await waitFor('a listener to leave', () => fx.listenerCount() === 2);
    const next = await fx.listen();
    expect(next.status).toBe(200);
    const over = await fx.listen();
    expect(over.status).toBe(503);
    expect(fx.listenerCount()).toBe(3);
  });
});
