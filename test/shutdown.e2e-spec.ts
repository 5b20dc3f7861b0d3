import { randomBytes } from 'node:crypto';
import { uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { REDIS_URL } from './support/environment.js';
import { KeepAliveClient, type Outcome } from './support/keep-alive-client.js';
import { waitFor } from './support/ports.js';
import { ensureBuilt, ServiceProcess } from './support/service-process.js';
import { SseStream } from './support/sse.js';

const LISTEN = '/api/webhooks/prevnames/listen';
const PUBLISH = '/api/webhooks/prevnames';
const READY = '/api/health/ready';
const PROCESS_TIMEOUT_MS = 180_000;
const NO_LISTENERS = { message: 'Failed to deliver event: no active listeners', code: 500 };

interface Sent {
  name: string;
  outcome: Outcome;
}

/**
 * Graceful shutdown under keep-alive load (issue 13, point 4): a real `node dist/main.js`,
 * clients posting back-to-back on keep-alive connections and a listener, then SIGTERM.
 */
describe('SIGTERM under keep-alive load (node dist/main.js)', () => {
  let db: TestDatabase;
  let service: ServiceProcess;
  const clients: KeepAliveClient[] = [];

  beforeAll(async () => {
    ensureBuilt();
    db = await TestDatabase.create();
  }, PROCESS_TIMEOUT_MS);

  afterAll(async () => {
    for (const client of clients) client.close();
    await service?.stop('SIGKILL');
    await db?.drop();
  });

  it(
    'answers every request it takes, closes keep-alive connections, and exits 0 on its own',
    async () => {
      service = await ServiceProcess.start({
        DATABASE_URL: db.url,
        REDIS_URL,
        REDIS_KEY_PREFIX: uniqueRedisPrefix(),
        // Far away: an exit on the timer would be code 1.
        SHUTDOWN_TIMEOUT_MS: '60000',
      });
      const run = randomBytes(4).toString('hex');
      const listener = await SseStream.open(`${service.url}${LISTEN}`);
      expect(listener.status).toBe(200);

      // Readiness on a keep-alive connection of its own, asked back-to-back.
      const probe = new KeepAliveClient(service.url);
      clients.push(probe);
      const probes: Outcome[] = [];
      const probing = (async () => {
        for (;;) {
          const outcome = await probe.request('GET', READY);
          probes.push(outcome);
          if (outcome.status !== 200) return;
        }
      })();

      // Three publishers, each back-to-back on its own keep-alive connection, until the
      // instance stops taking connections (a refused connection carried no request).
      const sent: Sent[][] = [[], [], []];
      let n = 0;
      const publishers = sent.map(async (mine) => {
        const client = new KeepAliveClient(service.url);
        clients.push(client);
        for (;;) {
          n += 1;
          const name = `${run}-${n}`;
          const outcome = await client.request('POST', PUBLISH, {
            userId: `shutdown-${run}`,
            type: 'username',
            name,
            changedAt: new Date(Date.UTC(2024, 0, 1) + n * 1000).toISOString(),
          });
          mine.push({ name, outcome });
          if (outcome.status === undefined) return;
        }
      });

      await waitFor('30 answers to each publisher', () => sent.every((s) => s.length >= 30), {
        timeoutMs: 60_000,
      });
      service.signal('SIGTERM');
      const exit = await service.exited;
      await Promise.all([...publishers, probing]);

      expect(exit).toEqual({ code: 0, signal: null });
      expect(service.output).not.toMatch(/unhandled|uncaught/i);

      // Readiness: 503 from the signal on, and that connection closed after it.
      const lastProbe = probes.at(-1)!;
      expect(lastProbe).toMatchObject({
        status: 503,
        body: JSON.stringify({ message: 'Not ready: shutting down', code: 503 }),
      });
      expect(lastProbe.status === 503 && lastProbe.headers.connection).toBe('close');
      expect(probes.slice(0, -1).every((p) => p.status === 200)).toBe(true);

      for (const mine of sent) {
        // Every request that reached the instance was answered; the one after its last
        // answer found the port closed.
        const failures = mine.filter((s) => s.outcome.status === undefined);
        expect(failures.map((s) => s.outcome)).toEqual([
          { status: undefined, error: 'ECONNREFUSED', reusedSocket: false },
        ]);
        expect(mine.at(-1)!.outcome.status).toBeUndefined();
        const answers = mine.slice(0, -1).map((s) => s.outcome);
        for (const answer of answers) {
          const body =
            answer.status === undefined ? undefined : (JSON.parse(answer.body) as unknown);
          if (answer.status === 200) expect(body).toEqual({ success: true });
          else expect([answer.status, body]).toEqual([500, NO_LISTENERS]);
        }
        // The last answer told the client to take its next request elsewhere.
        const last = answers.at(-1)!;
        expect(last.status !== undefined && last.headers.connection).toBe('close');
        expect(
          new Set(answers.slice(0, -1).map((a) => a.status !== undefined && a.headers.connection)),
        ).toEqual(new Set(['keep-alive']));
      }

      // A stored event always got its answer, and every answered one is stored.
      const answered = sent.flat().filter((s) => s.outcome.status !== undefined);
      const stored = await db.query<{ name: string }>(
        'SELECT name FROM name_change_events WHERE user_id = $1',
        [`shutdown-${run}`],
      );
      expect(stored.map((r) => r.name).sort()).toEqual(answered.map((s) => s.name).sort());
      expect(answered.filter((s) => s.outcome.status === 200).length).toBeGreaterThanOrEqual(90);

      // The stream ended cleanly, with events in order.
      await listener.until((s) => s.ended);
      expect(listener.response.complete).toBe(true);
      const ids = listener.events.map((e) => BigInt(e.id!));
      expect(ids.every((id, i) => i === 0 || id > ids[i - 1])).toBe(true);
    },
    PROCESS_TIMEOUT_MS,
  );
});
