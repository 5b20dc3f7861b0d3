import { STREAM_BACKENDS, useApp } from './support/app.js';
import { nameEvent, uniqueUserId, type NameEventBody } from './support/events.js';
import { waitFor } from './support/ports.js';
import { ThrowawayRedis } from './support/redis-server.js';
import { frame, opening } from './support/sse.js';

/** A client that comes back: the replay after its last id, then live, with no gap. */
describe.each(STREAM_BACKENDS)('resuming a stream, on $name', ({ backend }) => {
  const fx = useApp({ backend });

  it('replays what a client missed after Last-Event-ID, then goes live, without gap or duplicate', async () => {
    const { userId } = nameEvent();
    const first = await fx.listen();
    const event = (i: number): NameEventBody => ({
      userId,
      type: 'username',
      name: `n${i}`,
      changedAt: `2024-03-0${i}T00:00:00.000Z`,
    });
    expect((await fx.publish(event(1))).status).toBe(200);
    await first.untilEvents(1);
    const lastId = first.events[0].id!;
    first.close();

    const keeper = await fx.listen(); // keeps the instance listening while the client is away
    for (const i of [2, 3, 4]) expect((await fx.publish(event(i))).status).toBe(200);
    await keeper.untilEvents(3);

    const resumed = await fx.listen(`?userId=${encodeURIComponent(userId)}`, {
      'Last-Event-ID': lastId,
    });
    expect((await fx.publish(event(5))).status).toBe(200);
    await fx.sentinel([resumed], event(6));
    expect(resumed.events.map((e) => (e.data as { name: string }).name)).toEqual([
      'n2',
      'n3',
      'n4',
      'n5',
      'n6',
    ]);
    const ids = resumed.events.map((e) => BigInt(e.id!));
    expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : 1)));
    expect(ids[0]).toBeGreaterThan(BigInt(lastId));

    const byQuery = await fx.listen(`?userId=${encodeURIComponent(userId)}&lastEventId=${lastId}`);
    await byQuery.untilEvents(5);
    expect(byQuery.events).toEqual(resumed.events);
  });

  it('gives a new stream its starting id, so a client that never got an event resumes without a gap', async () => {
    const { userId } = nameEvent();
    const first = await fx.listen(`?userId=${encodeURIComponent(userId)}`);
    await first.until((s) => s.messages.length > 0);
    const startId = first.messages[0].id!;
    expect(startId).toMatch(/^\d+$/);
    first.close();

    const keeper = await fx.listen();
    const missed = nameEvent({ userId, name: 'missed', changedAt: '2024-05-01T00:00:00.000Z' });
    expect((await fx.publish(missed)).status).toBe(200);
    await keeper.untilEvents(1);

    const resumed = await fx.listen(`?userId=${encodeURIComponent(userId)}`, {
      'Last-Event-ID': startId,
    });
    await resumed.untilEvents(1);
    expect(resumed.events.map((e) => e.data)).toEqual([missed]);
    expect(resumed.raw.startsWith(`${opening(startId)}id: `)).toBe(true);
  });
});

describe('an event stored and not yet broadcast (PUBLISH held by CLIENT PAUSE)', () => {
  // A Redis of this block's own: CLIENT PAUSE would hold every other test file's PUBLISH too.
  let redis: ThrowawayRedis;
  beforeAll(async () => {
    redis = await ThrowawayRedis.start();
  });
  const fx = useApp({ env: () => ({ REDIS_URL: redis.url }) });
  afterAll(() => redis?.kill());

  const listen = async (headers: Record<string, string> = {}) => {
    const stream = await fx.listen('', headers);
    expect(stream.status).toBe(200);
    return stream;
  };
  /**
   * POSTs `body` with PUBLISH held by Redis; resolves once it is stored, with its answer still
   * to come (wrapped: an async function would wait for it).
   */
  const postHeld = async (body: NameEventBody) => {
    expect(await redis.command('CLIENT', 'PAUSE', '5000', 'WRITE')).toBe('+OK');
    const answer = fx.publish(body);
    await waitFor('the held event to be stored', async () => {
      const rows = await fx.db.query('SELECT 1 FROM name_change_events WHERE user_id = $1', [
        body.userId,
      ]);
      return rows.length === 1;
    });
    return { answer };
  };

  it('reaches a client resuming with Last-Event-ID once, in the replay', async () => {
    const keeper = await listen();
    const [first, second, third] = [nameEvent(), nameEvent(), nameEvent()];
    expect((await fx.publish(first)).status).toBe(200);
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
    expect((await fx.publish(third)).status).toBe(200);
    const sentinel = await fx.sentinel([keeper, resumed]);
    const thirdId = keeper.events[2].id!;
    expect(resumed.raw).toBe(
      `${opening(firstId)}${frame(secondId, second)}${frame(thirdId, third)}${sentinel.frame}`,
    );
    expect(BigInt(secondId)).toBe(BigInt(firstId) + 1n);
    expect(BigInt(thirdId)).toBe(BigInt(secondId) + 1n);
  });

  it('reaches a new client right behind its starting id, so leaving then and resuming misses nothing', async () => {
    const keeper = await listen();
    const [held, next] = [nameEvent(), nameEvent()];

    const { answer } = await postHeld(held);
    // A new client, with no id yet, that leaves as soon as it has read anything at all. Its
    // starting id must not name the held event before the event itself has gone out to it.
    const leaving = listen().then(async (stream) => {
      await stream.until((s) => s.messages.length > 0);
      stream.close();
      return stream;
    });
    // Its starting id waits for the publish in progress (which holds the publish lock).
    await waitFor(
      'the new stream to wait for the publish in progress',
      async () => (await fx.db.sessionsWaitingOnLock(true)) === 1,
    );
    expect(await redis.command('CLIENT', 'UNPAUSE')).toBe('+OK');
    expect((await answer).status).toBe(200);
    await keeper.untilEvents(1);
    const heldId = keeper.events[0].id!;
    const left = await leaving;
    expect(left.raw).toBe(`${opening(heldId)}${frame(heldId, held)}`);

    // Resuming from the last id it read, it gets what came after, and nothing twice.
    const lastRead = left.messages.at(-1)!.id!;
    const resumed = await listen({ 'Last-Event-ID': lastRead });
    expect((await fx.publish(next)).status).toBe(200);
    await keeper.untilEvents(2);
    const sentinel = await fx.sentinel([keeper, resumed]);
    expect(resumed.raw).toBe(
      `${opening(lastRead)}${frame(keeper.events[1].id!, next)}${sentinel.frame}`,
    );
  });
});

describe('the replay window (SSE_REPLAY_LIMIT) keeps the newest events, in id order', () => {
  const fx = useApp({ env: { SSE_REPLAY_LIMIT: '5' } });

  it('replays ids 8-12 of 12 (not "5"-"9", as text would sort them)', async () => {
    const userId = uniqueUserId('window');
    const event = (n: number): NameEventBody => ({
      userId,
      type: 'username',
      name: `w${n}`,
      changedAt: new Date(Date.UTC(2024, 0, 1) + n * 1000).toISOString(),
    });
    await fx.listen(`?userId=${userId}`); // keeps the instance listening
    for (let n = 1; n <= 12; n++) expect((await fx.publish(event(n))).status).toBe(200);
    const ids = (
      await fx.db.query<{ id: string }>(
        'SELECT id::text AS id FROM name_change_events WHERE user_id = $1 ORDER BY name_change_events.id',
        [userId],
      )
    ).map((r) => r.id);
    expect(ids).toEqual(Array.from({ length: 12 }, (_, i) => String(i + 1)));

    const replay = await fx.listen(`?userId=${userId}`, { 'Last-Event-ID': '0' });
    await fx.sentinel([replay], event(13));
    expect(replay.events.map((e) => e.id)).toEqual(['8', '9', '10', '11', '12', '13']);
    expect(replay.events.map((e) => (e.data as { name: string }).name)).toEqual([
      'w8',
      'w9',
      'w10',
      'w11',
      'w12',
      'w13',
    ]);
  });
});
