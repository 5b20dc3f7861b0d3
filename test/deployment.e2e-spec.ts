import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { REDIS_URL } from './support/environment.js';
import { EventSourceClient } from './support/event-source-client.js';
import { KeepAliveClient, type Outcome } from './support/keep-alive-client.js';
import { Nginx } from './support/nginx.js';
import { freePort, waitFor } from './support/ports.js';
import { ensureBuilt, type Exit, ServiceProcess } from './support/service-process.js';

/**
 * The deployment as shipped, without Docker: Debian's nginx running deploy/nginx.conf (only
 * the upstream and listen addresses and the log path rewritten) in front of two instances
 * (`node dist/main.js`), configured as docker-compose.yml configures them.
 */

const LISTEN = '/api/webhooks/prevnames/listen';
const PUBLISH = '/api/webhooks/prevnames';
const PROCESS_TIMEOUT_MS = 300_000;
const ARTIFACTS = fileURLToPath(new URL('artifacts/', import.meta.url));

/** What docker-compose.yml sets on each instance (besides the addresses). */
const COMPOSE_ENV = { TRUST_PROXY: '1' };

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

describe('client addresses and metrics behind the shipped nginx', () => {
  let db: TestDatabase;
  let instance: ServiceProcess;
  let nginx: Nginx;
  const clients: KeepAliveClient[] = [];
  /** A client on its own loopback address, as a host on the network would be. */
  const from = (localAddress: string) => {
    const client = new KeepAliveClient(nginx.url, { localAddress });
    clients.push(client);
    return client;
  };
  const event = (name: string) => ({
    userId: `addresses-${name}`,
    type: 'username',
    name,
    changedAt: '2024-01-01T00:00:00.000Z',
  });

  beforeAll(async () => {
    ensureBuilt();
    db = await TestDatabase.create();
    instance = await ServiceProcess.start({
      ...COMPOSE_ENV,
      DATABASE_URL: db.url,
      REDIS_URL,
      REDIS_KEY_PREFIX: uniqueRedisPrefix(),
      PUBLISH_RATE_LIMIT: '2',
      LOG_LEVEL: 'info',
    });
    // Both upstream entries on the one instance.
    nginx = await Nginx.start([instance.port, instance.port]);
  }, PROCESS_TIMEOUT_MS);

  afterAll(async () => {
    for (const client of clients) client.close();
    await nginx?.stop();
    await instance?.stop('SIGKILL');
    await db?.drop();
  });

  it('keys the rate limit on the address nginx saw, whatever X-Forwarded-For a client sends', async () => {
    const forger = from('127.0.0.2');
    const statuses = [];
    for (const forged of ['203.0.113.7', '198.51.100.1', '192.0.2.99, 10.0.0.1']) {
      const answer = await forger.request('POST', PUBLISH, event(`forged-${statuses.length}`), {
        'X-Forwarded-For': forged,
      });
      statuses.push(answer.status);
    }
    // No listener anywhere: a POST within the limit is stored and answered 500.
    expect(statuses).toEqual([500, 500, 429]);
    // Another client has a bucket of its own.
    expect((await from('127.0.0.3').request('POST', PUBLISH, event('other'))).status).toBe(500);
  });

  it('logs the client address on the request line', async () => {
    const answer = await from('127.0.0.4').request(
      'GET',
      '/api/users/someone/prevnames',
      undefined,
      {
        'X-Forwarded-For': '203.0.113.8',
        'X-Request-Id': 'client-address-line',
      },
    );
    expect(answer.status).toBe(200);
    const line = await waitFor('the request line', () =>
      instance.output
        .split('\n')
        .filter((l) => l.includes('"client-address-line"'))
        .map((l) => JSON.parse(l) as { req?: unknown; res?: unknown; msg: string })
        .find((l) => l.msg === 'request completed'),
    );
    expect(line.req).toEqual({
      id: 'client-address-line',
      method: 'GET',
      url: '/api/users/someone/prevnames',
      remoteAddress: '127.0.0.4',
    });
    expect(line.res).toEqual({ statusCode: 200 });
  });

  it('does not serve the metrics through the proxy, by any spelling of the path', async () => {
    const client = from('127.0.0.5');
    for (const path of [
      '/api/metrics',
      '/api/metrics/',
      '/API/Metrics',
      '//api//metrics',
      '/api/%6Detrics',
      '/api/./metrics',
      '/api/metrics?format=text',
    ]) {
      const answer = await client.request('GET', path);
      expect([path, answer.status, answer.status && answer.headers['content-type']]).toEqual([
        path,
        404,
        'application/json',
      ]);
      expect(answer.status && JSON.parse(answer.body)).toEqual({ message: 'Not found', code: 404 });
    }
    // On the instance itself (the internal network, where Prometheus scrapes), they are there.
    const internal = new KeepAliveClient(instance.url);
    clients.push(internal);
    const direct = await internal.request('GET', '/api/metrics');
    expect(direct.status).toBe(200);
    expect(direct.status && direct.body).toContain('name_history_sse_listeners');
  });

  it('answers its own errors with the service’s error body', async () => {
    const answer = await from('127.0.0.6').request('POST', PUBLISH, {
      userId: 'x',
      type: 'username',
      name: 'x'.repeat(70_000),
      changedAt: '2024-01-01T00:00:00.000Z',
    });
    expect([answer.status, answer.status && answer.headers['content-type']]).toEqual([
      413,
      'application/json',
    ]);
    expect(answer.status && JSON.parse(answer.body)).toEqual({
      message: 'Request body exceeds the 16 KiB limit',
      code: 413,
    });
  });
});
