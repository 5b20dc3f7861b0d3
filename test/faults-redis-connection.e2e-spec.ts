import { STREAM_FAILED } from './support/api.js';
import { useApp } from './support/app.js';
import { REDIS_URL } from './support/environment.js';
import { eventsOf, streamed, uniqueUserId } from './support/events.js';
import { waitFor } from './support/ports.js';
import { spyOnEachTest } from './support/process-spies.js';
import { ThrowawayRedis } from './support/redis-server.js';
import { TcpProxy } from './support/tcp-proxy.js';

/** How long the service lets Redis take to answer before it takes the connection for dead. */
const REDIS_RESPONSE_TIMEOUT_MS = 5_000;

describe('faults: a Redis connection still being opened (a TCP proxy in front of Redis holds its handshake)', () => {
  let proxy: TcpProxy;
  beforeAll(async () => {
    const redis = new URL(REDIS_URL);
    proxy = await TcpProxy.start({ host: redis.hostname, port: Number(redis.port || 6379) });
  });
  const fx = useApp({ env: () => ({ REDIS_URL: `redis://127.0.0.1:${proxy.port}` }) });
  afterAll(() => proxy?.close());
  const spies = spyOnEachTest();

  it('answers a listen that arrives before the new connection is ready with the contract 500, and keeps that connection', async () => {
    const first = await fx.listen();
    expect(first.status).toBe(200);
    // The publisher, the subscriber and the leases' (the event log's consumers compete for theirs).
    expect(proxy.forwarded).toBe(3);

    // The connections drop; their replacements connect, and the proxy holds what they send.
    // A SUBSCRIBE written now, before ioredis's ready check (Redis allows SUBSCRIBE while
    // loading), would put the connection in subscriber mode: the ready check's INFO would be
    // refused, and ioredis would drop the connection it had just opened.
    proxy.stall();
    proxy.drop();
    await first.until((s) => s.ended, 10_000);
    await waitFor('the Redis connections to be opened again and held', () => proxy.heldCount === 3);
    // Answered at once, with the handshake still held: the listen does not wait for it.
    const refused = await fx.listen('', { 'Last-Event-ID': first.events.at(-1)?.id ?? '0' });
    proxy.restore();
    expect(refused.status).toBe(500);
    expect(JSON.parse(await refused.body())).toEqual(STREAM_FAILED);

    // Once the connection is ready, a listen subscribes, and the connection stays: no fourth
    // one. An event through the publisher and the subscriber, there and back, shows them up.
    const stream = await fx.listenWhenUp();
    const body = eventsOf(uniqueUserId('faults'))();
    expect((await fx.publish(body)).body).toEqual({ success: true });
    await stream.untilEvents(1);
    expect(stream.events.map((e) => e.data)).toEqual([streamed(body)]);
    expect(stream.ended).toBe(false);
    expect(proxy.forwarded).toBe(6);
    expect(fx.listenerCount()).toBe(1);
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  });
});

describe('faults: Redis dies with a heartbeat unanswered (a TCP proxy in front of a throwaway redis-server)', () => {
  let redis: ThrowawayRedis;
  let proxy: TcpProxy;
  beforeAll(async () => {
    redis = await ThrowawayRedis.start();
    proxy = await TcpProxy.start({ host: '127.0.0.1', port: redis.port });
  });
  const fx = useApp({ env: () => ({ REDIS_URL: `redis://127.0.0.1:${proxy.port}` }) });
  afterAll(async () => {
    await proxy?.close();
    await redis?.kill();
  });
  const spies = spyOnEachTest();

  it('keeps the connection it opened after Redis died with a heartbeat unanswered', async () => {
    const first = await fx.listenWhenUp();
    // Stopped, Redis leaves the subscriber's next heartbeat PING unanswered (nothing else is
    // sent while nobody publishes)...
    const sentBefore = proxy.bytesFromClients;
    redis.pause();
    await waitFor('the heartbeat PING to be sent', () => proxy.bytesFromClients > sentBefore);
    const pingSentBy = Date.now();
    // ...and dies with it outstanding. The instance reconnects as soon as Redis is back.
    await redis.kill();
    await first.until((s) => s.ended, 10_000);
    await redis.restart();
    const stream = await fx.listenWhenUp();

    // The PING's response timeout is the dead socket's: once it has run out (the service's
    // timer, set when the PING was written, fires before this one), the new connection must
    // still carry events.
    await new Promise((resolve) =>
      setTimeout(resolve, pingSentBy + REDIS_RESPONSE_TIMEOUT_MS - Date.now()),
    );
    await new Promise((resolve) => setImmediate(resolve));
    const body = eventsOf(uniqueUserId('faults'))();
    expect((await fx.publish(body)).body).toEqual({ success: true });
    await stream.untilEvents(1);
    expect(stream.events.map((e) => e.data)).toEqual([streamed(body)]);
    expect(stream.ended).toBe(false);
    expect(fx.listenerCount()).toBe(1);
    expect(spies.rejections).toEqual([]);
    expect(spies.exceptions).toEqual([]);
  });
});
