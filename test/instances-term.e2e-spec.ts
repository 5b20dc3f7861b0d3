/**
 * An instance stopped (SIGTERM) with a POST in flight, beside another: the POST finishes and
 * the instance exits 0 within SHUTDOWN_TIMEOUT_MS, or gives up on it and exits 1 past it.
 */
import type pg from 'pg';
import { PUBLISH_LOCK_KEY } from '../src/name-events/name-event-locks.js';
import { PUBLISH } from './support/api.js';
import { eventsOf, uniqueUserId, type NameEventBody } from './support/events.js';
import { post } from './support/http.js';
import { PROCESS_TIMEOUT_MS, useInstanceProcesses } from './support/instances.js';
import { waitFor } from './support/ports.js';
import type { ServiceProcess } from './support/service-process.js';

describe('instances as processes (node dist/main.js): SIGTERM', () => {
  const processes = useInstanceProcesses();

  let other: ServiceProcess;
  let lock: pg.Client;

  beforeAll(async () => {
    other = await processes.start();
    lock = await processes.db.connect();
  }, PROCESS_TIMEOUT_MS);

  /** Holds the publish lock, POSTs to `service`, and resolves once that POST waits on it. */
  async function postHeldInFlight(service: ServiceProcess, body: NameEventBody) {
    await lock.query('SELECT pg_advisory_lock($1)', [PUBLISH_LOCK_KEY]);
    const answer = post(`${service.url}${PUBLISH}`, body).catch((error: Error) => error);
    await waitFor(
      'the POST to wait on the publish lock',
      async () => (await processes.db.sessionsWaitingOnLock(true)) === 1,
    );
    // Wrapped: an async function returning the promise itself would wait for it.
    return { answer };
  }

  it(
    'finishes the POST in flight, ends the streams, and exits 0 well within SHUTDOWN_TIMEOUT_MS',
    async () => {
      const budget = 8_000;
      const stopping = await processes.start({ SHUTDOWN_TIMEOUT_MS: String(budget) });
      const userId = uniqueUserId('term');
      const body = eventsOf(userId)();
      const onStopping = await processes.listen(stopping);
      const onOther = await processes.listen(other, `?userId=${userId}`);

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
      expect((await processes.stored(userId)).map((r) => r.name)).toEqual([body.name]);

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
      const stopping = await processes.start({ SHUTDOWN_TIMEOUT_MS: String(budget) });
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
