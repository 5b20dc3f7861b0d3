import { DataSource } from 'typeorm';
import { NameChangeEvent } from '../src/name-events/name-change-event.entity.js';
import { useApp } from './support/app.js';
import { nameEvent, uniqueUserId, type NameEventBody } from './support/events.js';
import type { HttpResult } from './support/http.js';
import { waitFor } from './support/ports.js';
import { admin, ADMIN_TOKEN, OPTED_OUT, type ErasureBody } from './support/privacy.js';
import { ThrowawayRedis } from './support/redis-server.js';

/**
 * Erasure and opt-out while publishes are under way: each publish for the user is wholly
 * before the erasure or wholly after it, on the database, on the stream and in a replay.
 */

/** An event of `userId` named `name`, `second` seconds into 2025. */
function event(userId: string, name: string, second = 0): NameEventBody {
  return nameEvent({
    userId,
    name,
    changedAt: new Date(Date.UTC(2025, 0, 1) + second * 1000).toISOString(),
  });
}

describe('erasure and opt-out racing publishes (PostgreSQL and Redis)', () => {
  const fx = useApp({ env: { ADMIN_TOKEN } });

  const listen = async (query = '', headers: Record<string, string> = {}) => {
    const stream = await fx.listen(query, headers);
    expect(stream.status).toBe(200);
    await stream.until((s) => s.messages.length > 0);
    return stream;
  };
  const rows = (userId: string) =>
    fx.db.query<{ id: string; name: string }>(
      `SELECT id::text AS id, name FROM name_change_events WHERE user_id = $1
        ORDER BY name_change_events.id`,
      [userId],
    );

  /**
   * Publishes for `userId` in three waves around `act`: the first wave is under way (some
   * answered) when `act` starts, the second starts with it, the third once it has answered.
   */
  async function race<T>(userId: string, act: () => Promise<T>) {
    let answered = 0;
    const wave = (label: string, count: number) =>
      Array.from({ length: count }, async (_, i) => {
        const body = event(userId, `${label}${i}`, i);
        const { status } = await fx.publish(body);
        answered += 1;
        return { name: body.name, status };
      });
    const first = wave('a', 150);
    await waitFor('20 answers to the first wave', () => answered >= 20, { intervalMs: 1 });
    const answeredBefore = answered;
    const second = wave('b', 150);
    const result = await act();
    const third = wave('c', 20);
    const outcomes = await Promise.all([...first, ...second, ...third]);
    return { result, outcomes, answeredBefore };
  }

  it.each([1, 2, 3])(
    'an erasure cuts the user’s events in two: all published before it are gone, all after it kept (round %i)',
    async () => {
      const userId = uniqueUserId('race-erase');
      const live = await listen(`?userId=${userId}`);
      const startId = live.messages[0].id!;
      const { result, outcomes, answeredBefore } = await race(userId, () =>
        admin<ErasureBody>(fx.url, 'DELETE', `${userId}/prevnames`),
      );
      expect(outcomes.map((o) => o.status)).toEqual(outcomes.map(() => 200));
      await live.untilEvents(outcomes.length, 15_000);
      const delivered = live.events.map((e) => ({
        id: e.id!,
        name: (e.data as NameEventBody).name,
      }));
      expect(new Set(delivered.map((d) => d.name)).size).toBe(outcomes.length);

      expect(result.status).toBe(200);
      const { deleted } = result.body;
      // Those answered before the erasure was asked for are erased; the third wave is kept.
      expect(deleted).toBeGreaterThanOrEqual(answeredBefore);
      const remaining = await rows(userId);
      expect(remaining).toEqual(delivered.slice(deleted));
      const third = outcomes.filter((o) => o.name.startsWith('c')).map((o) => o.name);
      expect(remaining.map((r) => r.name)).toEqual(expect.arrayContaining(third));

      const replay = await listen(`?userId=${userId}`, { 'Last-Event-ID': startId });
      const sentinel = await fx.sentinel([live, replay]);
      expect(replay.events.map((e) => e.id)).toEqual([...remaining.map((r) => r.id), sentinel.id]);
    },
  );

  it.each([1, 2, 3])(
    'an opt-out leaves nothing of the user, refuses what follows, and broadcast only what it answered 200 (round %i)',
    async () => {
      const userId = uniqueUserId('race-opt-out');
      const live = await listen();
      const startId = live.messages[0].id!;
      const { result, outcomes, answeredBefore } = await race(userId, () =>
        admin(fx.url, 'PUT', `${userId}/opt-out`),
      );
      expect(result.status).toBe(200);
      const accepted = outcomes.filter((o) => o.status === 200).map((o) => o.name);
      const refused = outcomes.filter((o) => o.status === 403).map((o) => o.name);
      expect(accepted.length + refused.length).toBe(outcomes.length);
      expect(accepted.length).toBeGreaterThanOrEqual(answeredBefore);
      const third = outcomes.filter((o) => o.name.startsWith('c'));
      expect(third.map((o) => o.status)).toEqual(third.map(() => 403));
      expect(await rows(userId)).toEqual([]);

      const later = await fx.publish(event(userId, 'later'));
      expect(later.status).toBe(403);
      expect(later.body).toEqual(OPTED_OUT);

      const replay = await listen('', { 'Last-Event-ID': startId });
      const sentinel = await fx.sentinel([live, replay]);
      const names = live.events
        .filter((e) => (e.data as NameEventBody).userId === userId)
        .map((e) => (e.data as NameEventBody).name);
      expect(names.sort()).toEqual([...accepted].sort());
      expect(replay.events.map((e) => e.data)).toEqual([sentinel.data]);
    },
  );
});

describe('an erasure waits for a publish under way (Redis paused between insert and broadcast)', () => {
  let redis: ThrowawayRedis;

  beforeAll(async () => {
    redis = await ThrowawayRedis.start();
  });

  const fx = useApp({ env: () => ({ REDIS_URL: redis.url, ADMIN_TOKEN }) });

  afterAll(async () => {
    await redis.kill();
  });

  it.each([
    ['DELETE', 'prevnames'],
    ['PUT', 'opt-out'],
  ])(
    '%s /users/:userId/%s answers only once the event stored before it was broadcast, then erases it',
    async (method, route) => {
      const userId = uniqueUserId('in-flight');
      const live = await fx.listen();
      await live.until((s) => s.messages.length > 0);
      const startId = live.messages[0].id!;
      const body = event(userId, 'in-flight');
      const storedRows = () =>
        fx.db.query('SELECT 1 FROM name_change_events WHERE user_id = $1', [userId]);

      redis.pause();
      let erased: HttpResult | undefined;
      let published: HttpResult | undefined;
      try {
        const publishing = fx.publish(body).then((res) => (published = res));
        // Stored, and now waiting for Redis to take the broadcast.
        await waitFor('the event to be stored', async () => (await storedRows()).length === 1);
        const erasing = admin(fx.url, method, `${userId}/${route}`).then((res) => (erased = res));
        await waitFor('the erasure to answer or to wait for the publish lock', async () => {
          if (erased) return true;
          const waiting = await fx.db.query(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
          );
          return waiting.length > 0;
        });
        expect(erased).toBeUndefined();
        redis.resume();
        await Promise.all([publishing, erasing]);
      } finally {
        if (erased === undefined || published === undefined) redis.resume();
      }
      expect(published!.status).toBe(200);
      expect(erased!.status).toBe(200);
      expect(erased!.body).toEqual(
        route === 'prevnames'
          ? { userId, deleted: 1, code: 200 }
          : { userId, optedOut: true, code: 200 },
      );
      await live.untilEvents(1);
      expect(live.events.map((e) => e.data)).toEqual([body]);
      expect(await storedRows()).toEqual([]);

      const resumed = await fx.listen('', { 'Last-Event-ID': startId });
      const sentinel = await fx.sentinel([resumed]);
      expect(resumed.events.map((e) => e.data)).toEqual([sentinel.data]);
    },
  );
});

describe('erasing a user with 10,000 entries (PostgreSQL and Redis)', () => {
  const fx = useApp({ env: { ADMIN_TOKEN } });

  it('deletes them all in one request, and measures how long it takes', async () => {
    const userId = uniqueUserId('prolific');
    const bystander = uniqueUserId('bystander');
    const repository = fx.app.get(DataSource).getRepository(NameChangeEvent);
    for (let chunk = 0; chunk < 10; chunk++) {
      await repository.insert(
        Array.from({ length: 1000 }, (_, i) => {
          const n = chunk * 1000 + i;
          return {
            userId,
            type: 'username' as const,
            name: `name-${n}`,
            changedAt: new Date(Date.UTC(2020, 0, 1) + n * 60_000),
          };
        }),
      );
    }
    await repository.insert({
      userId: bystander,
      type: 'username',
      name: 'kept',
      changedAt: new Date(Date.UTC(2020, 0, 1)),
    });

    const started = performance.now();
    const res = await admin(fx.url, 'DELETE', `${userId}/prevnames`);
    const elapsedMs = performance.now() - started;
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ userId, deleted: 10_000, code: 200 });
    expect(
      await fx.db.query('SELECT 1 FROM name_change_events WHERE user_id = $1', [userId]),
    ).toEqual([]);
    expect(
      await fx.db.query<{ user_id: string; name: string }>(
        'SELECT user_id, name FROM name_change_events',
      ),
    ).toEqual([{ user_id: bystander, name: 'kept' }]);
    // A figure for docs/privacy.md, not a bound: timings are the benchmark's to judge.
    process.stdout.write(`Erasure of 10,000 entries: ${elapsedMs.toFixed(1)} ms over HTTP\n`);
  });
});
