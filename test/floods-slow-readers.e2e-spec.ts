import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import net from 'node:net';
import { LISTEN, METRICS } from './support/api.js';
import { useApp } from './support/app.js';
import { uniqueUserId } from './support/events.js';
import { http } from './support/http.js';
import { waitFor } from './support/ports.js';
import { spyOnEachTest } from './support/process-spies.js';
import { stalledListener } from './support/stalled-listener.js';

/** Resolves with the response of the next request to `url` the server takes. */
function nextResponseTo(server: Server, url: string): Promise<ServerResponse> {
  return new Promise((resolve) => {
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      if (req.url !== url) return;
      server.off('request', onRequest);
      resolve(res);
    };
    server.on('request', onRequest);
  });
}

describe('floods: a listener that stops reading', () => {
  const fx = useApp({ env: { SSE_BUFFER_LIMIT_BYTES: '16384' } });
  const spies = spyOnEachTest();

  it('cuts off a listener that stops reading past SSE_BUFFER_LIMIT_BYTES, while another keeps receiving promptly', async () => {
    await fx.untilNobodyListens();
    const userId = uniqueUserId('slow');
    const healthy = await fx.listen(`?userId=${userId}`);
    expect(healthy.status).toBe(200);

    // A raw client that reads the head and the retry frame, then never reads again.
    const slowUrl = `${LISTEN}?userId=${userId}`;
    const slowResponse = nextResponseTo(fx.app.getHttpServer(), slowUrl);
    const { socket: slow, head } = await stalledListener(fx.port, slowUrl);
    expect(fx.listenerCount()).toBe(2);
    const toSlow = await slowResponse;

    // 256-character names, each character escaped by JSON to six bytes: ~1.9 KB frames. The
    // kernel buffers several MB of a stalled loopback socket before the server sees it.
    const name = (n: number) => `${n}`.padEnd(256, '\u0001');
    let published = 0;
    /** Events the healthy listener got while the slow one was connected and backed up. */
    let receivedPastTheSlowOne = 0;
    // Smaller than half the limit: when a batch first finds the slow one backed up, what it
    // holds (at most the previous batch) and this batch stay under the limit, so this batch
    // goes past it before it is cut, however the kernel drained its socket.
    const BATCH = 4;
    const MAX_EVENTS = 8_000;
    while (fx.listenerCount() === 2 && published < MAX_EVENTS) {
      const batch = Array.from({ length: BATCH }, (_, i) => published + i);
      published += BATCH;
      const backedUp = toSlow.socket?.writableNeedDrain === true;
      await Promise.all(
        batch.map(async (n) => {
          const res = await fx.publish({
            userId,
            type: 'displayname',
            name: name(n),
            changedAt: new Date(Date.UTC(2024, 0, 1) + n * 1000).toISOString(),
          });
          expect(res.status).toBe(200);
        }),
      );
      await healthy.untilEvents(published, 10_000);
      if (backedUp && fx.listenerCount() === 2) receivedPastTheSlowOne += BATCH;
    }
    expect(fx.listenerCount()).toBe(1);
    expect(published).toBeLessThan(MAX_EVENTS);

    // The healthy listener got every event once, in id order (a batch's concurrent POSTs are
    // stored in whatever order they take the publish lock), and was not held back by the slow one.
    const ids = healthy.events.map((e) => BigInt(e.id!));
    expect(ids.every((id, i) => i === 0 || id > ids[i - 1])).toBe(true);
    expect(healthy.events.map((e) => (e.data as { name: string }).name).sort()).toEqual(
      Array.from({ length: published }, (_, n) => name(n)).sort(),
    );
    expect(receivedPastTheSlowOne).toBeGreaterThan(0);
    process.stderr.write(
      `slow listener cut after ${published} events (${healthy.raw.length} bytes); ${receivedPastTheSlowOne} went past it while it was backed up\n`,
    );

    // What the slow client had is a byte-for-byte prefix of the healthy stream, then the end.
    const rest: Buffer[] = [];
    slow.on('data', (chunk: Buffer) => rest.push(chunk));
    const closed = new Promise((resolve) => slow.once('close', resolve));
    slow.resume();
    await closed;
    const all = Buffer.concat([head, ...rest]);
    const body = all.subarray(all.indexOf('\r\n\r\n') + 4).toString('utf8');
    const frames = dechunkedText(body);
    expect(frames.length).toBeGreaterThan(16_384);
    expect(frames.length).toBeLessThan(Buffer.byteLength(healthy.raw));
    expect(healthy.raw.startsWith(frames)).toBe(true);

    // It can reconnect with the last id it has and replay the rest.
    const lastId = [...frames.matchAll(/^id: (\d+)$/gm)].at(-1)?.[1] ?? '0';
    const resumed = await fx.listen(`?userId=${userId}`, { 'Last-Event-ID': lastId });
    await resumed.untilEvents(published - [...frames.matchAll(/^id: /gm)].length + 1);
    expect(resumed.events.at(-1)!.data).toEqual(healthy.events.at(-1)!.data);
    // A replay far larger than the bound (all of it, ~4.6 MB) is not a slow listener.
    const fromStart = await fx.listen(`?userId=${userId}`, { 'Last-Event-ID': '0' });
    await fromStart.untilEvents(published, 60_000);
    expect(fromStart.events).toEqual(healthy.events);
    const metrics = await http(`${fx.url}${METRICS}`);
    expect(metrics.text).toMatch(/^name_history_slow_listeners_disconnected_total 1$/m);
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  }, 180_000);
});

describe('floods: stopping with listeners that stopped reading', () => {
  const fx = useApp({ env: { SSE_BUFFER_LIMIT_BYTES: '16384' } });

  it('does not wait on one stalled mid-replay: the instance stops in seconds, other streams end cleanly', async () => {
    // ~9 MB of stored events (seeded directly: 6,000 POSTs would only make the test slow),
    // more than the kernel buffers of a loopback connection take.
    await fx.db.query(
      `INSERT INTO name_change_events (user_id, type, name, changed_at)
       SELECT 'stalled', 'username', repeat(chr(1), 250) || g, timestamp '2024-01-01' + g * interval '1 second'
         FROM generate_series(1, 6000) AS g`,
    );
    const healthy = await fx.listen();
    expect(healthy.status).toBe(200);

    // A client that stops reading in the middle of its replay: the server waits on it.
    const stalledUrl = `${LISTEN}?userId=stalled`;
    const stalledResponse = nextResponseTo(fx.app.getHttpServer(), stalledUrl);
    const replaying = net.connect({ port: fx.port, host: '127.0.0.1' });
    replaying.on('error', () => undefined);
    replaying.write(`GET ${stalledUrl} HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: 0\r\n\r\n`);
    replaying.pause();
    const response = await stalledResponse;
    await waitFor('the replay to wait for a reader', () => response.socket?.writableNeedDrain);
    expect(fx.listenerCount()).toBe(2);

    // The instance stops while the stalled client still reads nothing: it did not wait on it.
    let stopped = false;
    const stopping = fx.stop().then(() => (stopped = true));
    await waitFor('the instance to stop', () => stopped, { timeoutMs: 10_000 });
    await stopping;
    await healthy.until((s) => s.ended);
    expect(healthy.response.complete).toBe(true);
    replaying.destroy();
  }, 60_000);
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
