import http from 'node:http';
import { LISTEN } from './support/api.js';
import { useApp, type AppFixture } from './support/app.js';
import { uniqueUserId } from './support/events.js';
import { metric } from './support/metrics.js';
import { waitFor } from './support/ports.js';
import { frame, opening, type SseStream } from './support/sse.js';
import { stalledListener } from './support/stalled-listener.js';

/** 256 emoji: 1 KiB of UTF-8 in every frame (JSON leaves them as they are). */
const LONG_NAME = '\u{1F600}'.repeat(256);
const SLOW_CUT = 'name_history_slow_listeners_disconnected_total';

/**
 * Stores `count` events of one user straight in the table (a fixture: the replay reads the
 * table, whoever wrote it), one millisecond apart; returns their ids, oldest first.
 */
async function storeEvents(fx: AppFixture, userId: string, count: number, name = LONG_NAME) {
  const rows = await fx.db.query<{ id: string }>(
    `INSERT INTO name_change_events (user_id, type, name, changed_at)
     SELECT $1, 'username', $2, timestamptz '2024-01-01T00:00:00Z' + g * interval '1 ms'
       FROM generate_series(1, $3::int) g
     RETURNING id::text AS id`,
    [userId, name, count],
  );
  return rows.map((row) => row.id).sort((a, b) => Number(BigInt(a) - BigInt(b)));
}

const eventData = (userId: string, id: string, ids: string[], name = LONG_NAME) => ({
  userId,
  type: 'username',
  name,
  changedAt: new Date(Date.UTC(2024, 0, 1) + ids.indexOf(id) + 1).toISOString(),
});

describe('floods: a replay is read as the client takes it', () => {
  const fx = useApp({ env: { SSE_REPLAY_STALL_MS: '1000', SSE_REPLAY_LIMIT: '30000' } });

  it('sends every event of a window of many pages, in id order, then live, to a client that reads', async () => {
    const userId = uniqueUserId('pages');
    const ids = await storeEvents(fx, userId, 1_234, 'paged');
    const stream = await fx.listen(`?userId=${userId}`, { 'Last-Event-ID': '0' });
    await stream.untilEvents(1_234, 15_000);
    const live = {
      userId,
      type: 'displayname',
      name: 'live',
      changedAt: '2025-01-01T00:00:00.000Z',
    };
    expect((await fx.publish(live)).status).toBe(200);
    await stream.untilEvents(1_235);
    const liveId = stream.events[1_234].id!;
    expect(stream.raw).toBe(
      opening(0) +
        ids.map((id) => frame(id, eventData(userId, id, ids, 'paged'))).join('') +
        frame(liveId, live),
    );
  });

  it('cuts off a replaying listener that takes nothing for SSE_REPLAY_STALL_MS, counted as slow, and others go on', async () => {
    await fx.untilNobodyListens();
    const userId = uniqueUserId('stall');
    // 30 MB: more than the kernel buffers of a stalled loopback socket.
    await storeEvents(fx, userId, 30_000);
    const other = uniqueUserId('other');
    const healthy = await fx.listen(`?userId=${other}`);
    const cutBefore = await metric(fx.url, SLOW_CUT);

    const stalled = await stalledListener(fx.port, `${LISTEN}?userId=${userId}`, [
      'Last-Event-ID: 0',
    ]);
    expect(stalled.head.toString('utf8')).toContain('\nid: 0\nretry: 3000\n\n');
    await waitFor('the stalled listener to be cut', () => fx.listenerCount() === 1, {
      timeoutMs: 20_000,
    });
    expect(await metric(fx.url, SLOW_CUT)).toBe(cutBefore + 1);

    const live = {
      userId: other,
      type: 'username',
      name: 'after',
      changedAt: '2025-01-01T00:00:00.000Z',
    };
    expect((await fx.publish(live)).status).toBe(200);
    await healthy.untilEvents(1);
    expect(healthy.events.map((e) => e.data)).toEqual([live]);
    stalled.socket.destroy();
  });
});

describe('floods: replays waiting their turn, and live events held meanwhile', () => {
  const fx = useApp({
    env: {
      SSE_REPLAY_CONCURRENCY: '1',
      SSE_REPLAY_STALL_MS: '600000',
      SSE_REPLAY_LIMIT: '30000',
      SSE_BUFFER_LIMIT_BYTES: '16384',
    },
  });

  it('queues replays past SSE_REPLAY_CONCURRENCY without refusing any, a stalled one blocking none', async () => {
    const stalledUser = uniqueUserId('stalled');
    await storeEvents(fx, stalledUser, 30_000);
    const stalled = await stalledListener(fx.port, `${LISTEN}?userId=${stalledUser}`, [
      'Last-Event-ID: 0',
    ]);

    const userId = uniqueUserId('queued');
    const ids = await storeEvents(fx, userId, 450, 'queued');
    const streams: SseStream[] = await Promise.all(
      Array.from({ length: 30 }, () => fx.listen(`?userId=${userId}`, { 'Last-Event-ID': '0' })),
    );
    expect(streams.map((s) => s.status)).toEqual(streams.map(() => 200));
    await Promise.all(streams.map((s) => s.untilEvents(450, 20_000)));
    const expected =
      opening(0) + ids.map((id) => frame(id, eventData(userId, id, ids, 'queued'))).join('');
    expect(streams.map((s) => s.raw)).toEqual(streams.map(() => expected));
    stalled.socket.destroy();
  });

  it('cuts off a listener once the live events held during its replay pass SSE_BUFFER_LIMIT_BYTES', async () => {
    await fx.untilNobodyListens();
    const userId = uniqueUserId('held');
    await storeEvents(fx, userId, 30_000);
    const cutBefore = await metric(fx.url, SLOW_CUT);
    const stalled = await stalledListener(fx.port, `${LISTEN}?userId=${userId}`, [
      'Last-Event-ID: 0',
    ]);
    // Frames of 994 bytes (`id: <id>\ndata: <json>\n\n`, ids of 5 or 6 digits): 16 of them
    // held stay within 16 KiB, by more than any id's length can change; the 17th passes it.
    // (No replay can end meanwhile: it stalls.)
    /** A distinct name of `bytes` bytes of UTF-8, in at most 256 code points. */
    const nameOf = (n: number, bytes: number) => {
      const tag = String(n).padStart(2, '0');
      const emoji = Math.floor((bytes - tag.length) / 4);
      return tag + 'x'.repeat(bytes - tag.length - emoji * 4) + '\u{1F600}'.repeat(emoji);
    };
    const eventOf = (n: number, nameBytes: number) => ({
      userId,
      type: 'username',
      name: nameOf(n, nameBytes),
      changedAt: '2025-01-01T00:00:00.000Z',
    });
    const overhead =
      Buffer.byteLength(`id: 123456\ndata: ${JSON.stringify(eventOf(0, 2))}\n\n`) - 2;
    for (let n = 1; n <= 16; n++) {
      expect((await fx.publish(eventOf(n, 994 - overhead))).status).toBe(200);
    }
    expect(fx.listenerCount()).toBe(1);
    expect((await fx.publish(eventOf(17, 994 - overhead))).status).toBe(200);
    await waitFor('the listener to be cut', () => fx.listenerCount() === 0);
    expect(await metric(fx.url, SLOW_CUT)).toBe(cutBefore + 1);
    stalled.socket.destroy();
  });
});

describe('floods: listeners per client address', () => {
  const fx = useApp({ env: { SSE_MAX_LISTENERS_PER_ADDRESS: '2', TRUST_PROXY: 'loopback' } });
  const from = (address: string) => ({ 'X-Forwarded-For': address });

  it('answers 429 past SSE_MAX_LISTENERS_PER_ADDRESS from one address (an IPv6 /64), others unaffected', async () => {
    const statuses = async (...addresses: string[]) => {
      const opened: number[] = [];
      for (const address of addresses) opened.push((await fx.listen('', from(address))).status);
      return opened;
    };
    expect(await statuses('203.0.113.7', '203.0.113.7')).toEqual([200, 200]);
    const refused = await fx.listen('', from('203.0.113.7'));
    expect([refused.status, refused.headers['retry-after'], await refused.body()]).toEqual([
      429,
      '10',
      JSON.stringify({ message: 'Too many listeners from this client address', code: 429 }),
    ]);
    // IPv4-mapped IPv6 is the IPv4 address; IPv6 addresses count by their /64.
    expect(await statuses('203.0.113.8', '::ffff:203.0.113.8', '::ffff:203.0.113.8')).toEqual([
      200, 200, 429,
    ]);
    expect(
      await statuses('2001:db8::1', '2001:db8::2:3', '2001:db8::4', '2001:db8:0:1::1'),
    ).toEqual([200, 200, 429, 200]);
  });

  it('counts a listener that left no more', async () => {
    await fx.untilNobodyListens();
    const first = await fx.listen('', from('198.51.100.1'));
    await fx.listen('', from('198.51.100.1'));
    expect((await fx.listen('', from('198.51.100.1'))).status).toBe(429);
    first.close();
    await waitFor('the listener to leave', () => fx.listenerCount() === 1);
    expect((await fx.listen('', from('198.51.100.1'))).status).toBe(200);
  });
});

describe('HEAD on the stream', () => {
  const fx = useApp({ env: { SSE_MAX_LISTENERS: '1' } });

  /** A HEAD request's status and headers, once its answer has ended. */
  const head = (path: string) =>
    new Promise<{ status: number; type?: string; body: string }>((resolve, reject) => {
      const request = http.request(`${fx.url}${path}`, { method: 'HEAD' }, (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () =>
          resolve({ status: response.statusCode!, type: response.headers['content-type'], body }),
        );
      });
      request.on('error', reject);
      request.end();
    });

  it("answers the stream's headers and ends, without opening a listener (even on a full instance)", async () => {
    const answers = [await head(LISTEN), await head(`${LISTEN}?lastEventId=5`)];
    expect(fx.listenerCount()).toBe(0);
    const listener = await fx.listen();
    expect(listener.status).toBe(200);
    answers.push(await head(LISTEN));
    const ok = { status: 200, type: 'text/event-stream', body: '' };
    expect(answers).toEqual([ok, ok, ok]);
    expect(await metric(fx.url, 'name_history_sse_listeners')).toBe(1);
    expect((await head(`${LISTEN}?lastEventId=x`)).status).toBe(400);
  });
});
