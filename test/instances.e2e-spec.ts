import type pg from 'pg';
import { LISTEN, PUBLISH } from './support/api.js';
import { uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { eventsOf, uniqueUserId, type NameEventBody } from './support/events.js';
import { post } from './support/http.js';
import { waitFor } from './support/ports.js';
import { ThrowawayRedis } from './support/redis-server.js';
import { sendSentinel } from './support/sentinel.js';
import { ensureBuilt, ServiceProcess } from './support/service-process.js';
import { streamsClosedAfterEach, type SseStream } from './support/sse.js';
/** PublishService's advisory lock ("pgpublsh"): holding it keeps a POST in flight. */
const PUBLISH_LOCK_KEY = '8099296189474205800';
/** Starting a process takes seconds, more on a loaded 2-core machine. */
const PROCESS_TIMEOUT_MS = 180_000;

/** POSTs, turning a connection failure (the instance died) into status 0. */
async function tryPost(url: string, body: NameEventBody): Promise<number> {
  try {
    return (await post(`${url}${PUBLISH}`, body)).status;
  } catch {
    return 0;
  }
}

/**
 * What a client that drops the ids it already has sees on `streams` (one listener, before
 * and after a reconnect): every stored id, and newly stored events in increasing id order.
 * Only `retried` names (a client's retry of a POST that failed) may come again or late.
 */
function expectComplete(
  streams: SseStream[],
  stored: { id: string; name: string }[],
  retried: Set<string>,
) {
  const events = streams.flatMap((s) => s.events);
  const ids = new Set(events.map((e) => e.id!));
  expect([...ids].sort()).toEqual(stored.map((row) => row.id).sort());
  const fresh = streams.flatMap((s, n) =>
    s.events
      .filter((e) => !retried.has((e.data as NameEventBody).name))
      .map((e) => ({ id: BigInt(e.id!), from: `${e.id}@stream${n}` })),
  );
  const disorder = fresh.findIndex((e, i) => i > 0 && e.id <= fresh[i - 1].id);
  // On failure, say where: which stream each id came from, around the first id out of order.
  expect(
    disorder === -1
      ? 'in order'
      : fresh.slice(Math.max(0, disorder - 3), disorder + 3).map((e) => e.from),
  ).toBe('in order');
  for (const e of events) {
    const row = stored.find((r) => r.id === e.id)!;
    expect((e.data as NameEventBody).name).toBe(row.name);
  }
}

describe('instances as processes (node dist/main.js): SIGKILL and SIGTERM', () => {
  let redis: ThrowawayRedis;
  let db: TestDatabase;
  let env: Record<string, string>;
  const services: ServiceProcess[] = [];
  const open = streamsClosedAfterEach();
  const start = async (extra: Record<string, string> = {}) => {
    const service = await ServiceProcess.start({ ...env, ...extra });
    services.push(service);
    return service;
  };
  const listen = async (service: ServiceProcess, query = '', headers = {}) => {
    const stream = await open(`${service.url}${LISTEN}${query}`, headers);
    expect(stream.status).toBe(200);
    return stream;
  };
  const stored = (userId: string) =>
    db.query<{ id: string; name: string }>(
      'SELECT id::text AS id, name FROM name_change_events WHERE user_id = $1 ORDER BY name_change_events.id',
      [userId],
    );

  beforeAll(async () => {
    ensureBuilt();
    redis = await ThrowawayRedis.start();
    db = await TestDatabase.create();
    env = {
      DATABASE_URL: db.url,
      REDIS_URL: redis.url,
      REDIS_KEY_PREFIX: uniqueRedisPrefix(),
      SSE_KEEPALIVE_MS: '1000',
    };
  }, PROCESS_TIMEOUT_MS);

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop('SIGKILL')));
    await redis?.kill();
    await db?.drop();
  });

  describe('SIGKILL', () => {
    let survivor: ServiceProcess;

    it(
      'loses nothing: the survivor streams with no gap, the victim’s listeners resume on it',
      async () => {
        const victim = await start();
        survivor = await start();
        const userId = uniqueUserId('kill');
        const next = eventsOf(userId);

        const onSurvivor = [await listen(survivor), await listen(survivor, `?userId=${userId}`)];
        const onVictim = [await listen(victim), await listen(victim, `?userId=${userId}`)];

        // Traffic to both: a steady publisher on the survivor, four on the victim.
        let stop = false;
        const failedOnVictim: NameEventBody[] = [];
        const survivorStatuses: number[] = [];
        const toSurvivor = (async () => {
          for (let i = 0; i < 400 && !stop; i++)
            survivorStatuses.push(await tryPost(survivor.url, next()));
        })();
        const toVictim = Array.from({ length: 4 }, async () => {
          for (let i = 0; i < 400 && !stop; i++) {
            const body = next();
            if ((await tryPost(victim.url, body)) !== 200) {
              failedOnVictim.push(body);
              if (victim.exit) return;
            }
          }
        });

        await onSurvivor[0].untilEvents(30, 20_000);
        victim.signal('SIGKILL');
        expect(await victim.exited).toEqual({ code: null, signal: 'SIGKILL' });
        await Promise.all(toVictim);
        for (const stream of onVictim) await stream.until((s) => s.ended, 10_000);

        // The victim's listeners reconnect to the survivor with the last id they had.
        const resumed = [
          await listen(survivor, '', { 'Last-Event-ID': onVictim[0].events.at(-1)?.id ?? '0' }),
          await listen(survivor, `?userId=${userId}`, {
            'Last-Event-ID': onVictim[1].events.at(-1)?.id ?? '0',
          }),
        ];
        const atReconnect = survivorStatuses.length;
        await waitFor(
          '30 more POSTs on the survivor',
          () => survivorStatuses.length >= atReconnect + 30,
        );
        stop = true;
        await toSurvivor;

        // Every POST to the survivor succeeded; a client retries those the victim never answered.
        expect(survivorStatuses.every((status) => status === 200)).toBe(true);
        for (const body of failedOnVictim) {
          expect(await tryPost(survivor.url, body)).toBe(200);
        }

        // A last event: once each listener has it, it has everything sent before it.
        await sendSentinel(survivor.url, [...onSurvivor, ...resumed], next());
        const rows = await stored(userId);
        const published = survivorStatuses.length + failedOnVictim.length + 1;
        expect(rows.length).toBeGreaterThanOrEqual(published);
        expect(new Set(rows.map((r) => r.name)).size).toBe(rows.length);
        const retried = new Set(failedOnVictim.map((b) => b.name));
        for (const listener of [
          [onSurvivor[0]],
          [onSurvivor[1]],
          [onVictim[0], resumed[0]],
          [onVictim[1], resumed[1]],
        ]) {
          expectComplete(listener, rows, retried);
        }
        // Only the events of the one user went to the filtered listeners.
        expect(onSurvivor[1].events.every((e) => (e.data as NameEventBody).userId === userId)).toBe(
          true,
        );
        expect(survivor.exit).toBeUndefined();
      },
      PROCESS_TIMEOUT_MS,
    );

    afterAll(async () => {
      await survivor?.stop('SIGTERM');
    });
  });

  describe('SIGTERM', () => {
    let other: ServiceProcess;
    let lock: pg.Client;

    beforeAll(async () => {
      other = await start();
      lock = await db.connect();
    }, PROCESS_TIMEOUT_MS);

    /** Holds the publish lock, POSTs to `service`, and resolves once that POST waits on it. */
    async function postHeldInFlight(service: ServiceProcess, body: NameEventBody) {
      await lock.query('SELECT pg_advisory_lock($1)', [PUBLISH_LOCK_KEY]);
      const answer = post(`${service.url}${PUBLISH}`, body).catch((error: Error) => error);
      await waitFor(
        'the POST to wait on the publish lock',
        async () => (await db.sessionsWaitingOnLock(true)) === 1,
      );
      // Wrapped: an async function returning the promise itself would wait for it.
      return { answer };
    }

    it(
      'finishes the POST in flight, ends the streams, and exits 0 well within SHUTDOWN_TIMEOUT_MS',
      async () => {
        const budget = 8_000;
        const stopping = await start({ SHUTDOWN_TIMEOUT_MS: String(budget) });
        const userId = uniqueUserId('term');
        const body = eventsOf(userId)();
        const onStopping = await listen(stopping);
        const onOther = await listen(other, `?userId=${userId}`);

        const { answer } = await postHeldInFlight(stopping, body);
        stopping.signal('SIGTERM');

        // Streams end first (cleanly), while the POST is still in flight.
        await onStopping.until((s) => s.ended, budget);
        expect(onStopping.response.complete).toBe(true);
        expect(stopping.exit).toBeUndefined();

        await lock.query('SELECT pg_advisory_unlock($1)', [PUBLISH_LOCK_KEY]);
        const res = await answer;
        expect(res).toMatchObject({ status: 200, body: { success: true } });
        await onOther.untilEvents(1);
        expect(onOther.events.map((e) => e.data)).toEqual([body]);
        expect((await stored(userId)).map((r) => r.name)).toEqual([body.name]);

        // 0: the shutdown finished before SHUTDOWN_TIMEOUT_MS (past it, the exit code is 1).
        expect(await stopping.exited).toEqual({ code: 0, signal: null });
        expect(stopping.output).not.toMatch(/unhandled|uncaught/i);
      },
      PROCESS_TIMEOUT_MS,
    );

    it(
      'abandons a POST stuck past SHUTDOWN_TIMEOUT_MS and exits 1 on time',
      async () => {
        const budget = 2_000;
        const stopping = await start({ SHUTDOWN_TIMEOUT_MS: String(budget) });
        const body = eventsOf(uniqueUserId('stuck'))();
        const { answer } = await postHeldInFlight(stopping, body);
        stopping.signal('SIGTERM');
        // 1, with the POST still held: the shutdown gave up on it when its time ran out.
        expect(await stopping.exited).toEqual({ code: 1, signal: null });
        // The connection went with the process: the client sees a network error, no answer.
        const outcome = await answer;
        expect('message' in outcome ? outcome.message : outcome).toMatch(/fetch failed/);
        await lock.query('SELECT pg_advisory_unlock($1)', [PUBLISH_LOCK_KEY]);
      },
      PROCESS_TIMEOUT_MS,
    );
  });
});
