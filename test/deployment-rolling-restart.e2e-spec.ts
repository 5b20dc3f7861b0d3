import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LISTEN, PUBLISH } from './support/api.js';
import { uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { REDIS_URL } from './support/environment.js';
import { EventSourceClient } from './support/event-source-client.js';
import { KeepAliveClient, type Outcome } from './support/keep-alive-client.js';
import { COMPOSE_ENV, Nginx } from './support/nginx.js';
import { freePort, waitFor } from './support/ports.js';
import { ensureBuilt, type Exit, ServiceProcess } from './support/service-process.js';

/**
 * The deployment as shipped, without Docker: Debian's nginx running deploy/nginx.conf (only
 * the upstream and listen addresses and the log path rewritten) in front of two instances
 * (`node dist/main.js`), configured as docker-compose.yml configures them, restarted one
 * after the other under traffic. What the proxy does to requests: deployment-proxy.
 */

const PROCESS_TIMEOUT_MS = 300_000;
const ARTIFACTS = fileURLToPath(new URL('artifacts/', import.meta.url));

/** How many times each value occurs. */
function tally(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

interface Published {
  name: string;
  outcome: Outcome;
}

describe('rolling restart behind the shipped nginx: instance 1, then instance 2', () => {
  let db: TestDatabase;
  let nginx: Nginx | undefined;
  const instances: ServiceProcess[] = [];
  const listeners: EventSourceClient[] = [];
  let publisher: KeepAliveClient | undefined;

  beforeAll(async () => {
    ensureBuilt();
    db = await TestDatabase.create();
  }, PROCESS_TIMEOUT_MS);

  afterAll(async () => {
    for (const listener of listeners) listener.close();
    publisher?.close();
    await nginx?.stop();
    await Promise.all(instances.map((instance) => instance.stop('SIGKILL')));
    await db?.drop();
  });

  it(
    'answers every POST with 200 and loses no listener and no event',
    async () => {
      const env = {
        ...COMPOSE_ENV,
        DATABASE_URL: db.url,
        REDIS_URL,
        REDIS_KEY_PREFIX: uniqueRedisPrefix(),
        SHUTDOWN_TIMEOUT_MS: '15000',
      };
      const ports: [number, number] = [await freePort(), await freePort()];
      const start = async (port: number) => {
        const instance = await ServiceProcess.start(env, { port });
        instances.push(instance);
        return instance;
      };
      const current = [await start(ports[0]), await start(ports[1])];
      nginx = await Nginx.start(ports);
      const proxy = nginx;

      for (let i = 0; i < 10; i++) {
        const listener = new EventSourceClient(`${proxy.url}${LISTEN}`);
        listeners.push(listener);
        listener.open();
      }
      await waitFor('10 listeners connected', () => listeners.every((l) => l.connected));

      // The publisher: one event every 50 ms (20/s), each POST on a kept-alive connection.
      const run = randomBytes(4).toString('hex');
      const client = new KeepAliveClient(proxy.url, { connections: 8 });
      publisher = client;
      const published: Published[] = [];
      const inFlight = new Set<Promise<void>>();
      let n = 0;
      const publish = () => {
        n += 1;
        const name = `${run}-${n}`;
        const sending = client
          .request('POST', PUBLISH, {
            userId: `rolling-${run}`,
            type: 'username',
            name,
            changedAt: new Date(Date.UTC(2024, 0, 1) + n * 1000).toISOString(),
          })
          .then((outcome) => {
            published.push({ name, outcome });
            inFlight.delete(sending);
          });
        inFlight.add(sending);
      };
      const pacing = setInterval(publish, 50);
      const answeredMore = (count: number) => {
        const target = published.length + count;
        return waitFor(`${count} more answers to the publisher`, () => published.length >= target, {
          timeoutMs: 60_000,
        });
      };

      const exits: Exit[] = [];
      const stopTimes: number[] = [];
      try {
        await answeredMore(40);
        for (const index of [0, 1]) {
          const stopping = current[index];
          const signalledAt = Date.now();
          stopping.signal('SIGTERM');
          exits.push(await stopping.exited);
          stopTimes.push(Date.now() - signalledAt);
          current[index] = await start(ports[index]);
          await answeredMore(40);
        }
      } finally {
        clearInterval(pacing);
        await Promise.all(inFlight);
      }

      const stored = await db.query<{ id: string; name: string }>(
        'SELECT id::text AS id, name FROM name_change_events WHERE user_id = $1 ORDER BY name_change_events.id',
        [`rolling-${run}`],
      );
      const storedIds = stored.map((row) => row.id);
      const everyoneHasAll = () =>
        listeners.every(
          (l) => l.lost !== undefined || new Set(l.events.map((e) => e.id)).size >= stored.length,
        );
      await waitFor('every listener to have every stored event', everyoneHasAll, {
        timeoutMs: 30_000,
      }).catch(() => undefined);

      const nonOk = published.filter((p) => p.outcome.status !== 200);
      const lostEvents = listeners.map(
        (l) => storedIds.filter((id) => !l.events.some((e) => e.id === id)).length,
      );
      const figures = {
        postsAnswered: published.filter((p) => p.outcome.status !== undefined).length,
        postsSent: published.length,
        nonOk: tally(
          nonOk.map((p) =>
            p.outcome.status === undefined
              ? p.outcome.error
              : `${p.outcome.status} ${p.outcome.body}`,
          ),
        ),
        listenerConnects: listeners.reduce((sum, l) => sum + l.attempts.length, 0),
        listenerNon200: listeners.flatMap((l) => l.attempts.filter((a) => a !== 200)),
        listenersLost: listeners.filter((l) => l.lost).map((l) => l.lost),
        longestListenerGapMs: Math.max(...listeners.map((l) => l.longestGap)),
        eventsStored: stored.length,
        eventsLostPerListener: lostEvents,
        exits,
        sigtermToExitMs: stopTimes,
        // nginx logs a failed attempt (a refused connect) as a 502 among the upstream
        // statuses, then the answer of the instance it moved on to.
        proxyNon200: tally(
          proxy
            .accessLog()
            .filter((line) => !/" 200 /.test(line))
            .map((line) => /"(\w+) [^"]*" (\d+) .*upstream_status=(.*?) request_time/.exec(line))
            .map((m) => (m ? `${m[1]} ${m[2]} upstream_status=${m[3]}` : 'unparsed')),
        ),
        proxyRetriedOnAnotherInstance: proxy
          .accessLog()
          .filter((line) => /upstream_status=\S+, /.test(line)).length,
      };
      mkdirSync(ARTIFACTS, { recursive: true });
      writeFileSync(`${ARTIFACTS}rolling-restart.json`, `${JSON.stringify(figures, null, 2)}\n`);

      expect(exits).toEqual([
        { code: 0, signal: null },
        { code: 0, signal: null },
      ]);
      expect(figures.nonOk).toEqual({});
      expect(figures.listenersLost).toEqual([]);
      expect(stored.map((row) => row.name).sort()).toEqual(published.map((p) => p.name).sort());
      for (const listener of listeners) {
        // Every event once, in id order, with the data that was stored.
        expect(listener.events.map((e) => e.id)).toEqual(storedIds);
        expect(listener.events.map((e) => (JSON.parse(e.data) as { name: string }).name)).toEqual(
          stored.map((row) => row.name),
        );
      }
      expect(figures.proxyNon200).toEqual({});
    },
    PROCESS_TIMEOUT_MS,
  );
});
