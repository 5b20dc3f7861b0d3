import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { EventSourceClient } from './support/event-source-client.js';
import { http } from './support/http.js';
import { KeepAliveClient, type Outcome } from './support/keep-alive-client.js';
import { waitFor } from './support/ports.js';
import { RedisSentinelGroup } from './support/redis-sentinel.js';
import { ensureBuilt, ServiceProcess } from './support/service-process.js';

const LISTEN = '/api/webhooks/prevnames/listen';
const PUBLISH = '/api/webhooks/prevnames';
const PROCESS_TIMEOUT_MS = 300_000;
const ARTIFACTS = fileURLToPath(new URL('artifacts/', import.meta.url));

interface Published {
  name: string;
  body: object;
  outcome: Outcome;
  at: number;
}

/**
 * Redis high availability: two instances on REDIS_SENTINELS / REDIS_SENTINEL_MASTER, with a
 * master, a replica and three sentinels (real `redis-server --sentinel` processes). The
 * master is killed (SIGKILL) under traffic; the sentinels promote the replica, and every
 * Redis role of the service (bus, rate limit) follows without a restart.
 */
describe('Redis through Sentinel: the master is killed and the replica promoted', () => {
  let db: TestDatabase;
  let group: RedisSentinelGroup;
  const instances: ServiceProcess[] = [];
  const listeners: EventSourceClient[] = [];
  const clients: KeepAliveClient[] = [];

  beforeAll(async () => {
    ensureBuilt();
    db = await TestDatabase.create();
    group = await RedisSentinelGroup.start();
  }, PROCESS_TIMEOUT_MS);

  afterAll(async () => {
    for (const listener of listeners) listener.close();
    for (const client of clients) client.close();
    await Promise.all(instances.map((instance) => instance.stop('SIGKILL')));
    await group?.stop();
    await db?.drop();
  });

  it(
    'recovers publishing after the promotion, loses no acknowledged event, and its listeners resume without a gap',
    async () => {
      const env = {
        DATABASE_URL: db.url,
        REDIS_SENTINELS: group.sentinelAddresses,
        REDIS_SENTINEL_MASTER: group.masterName,
        REDIS_KEY_PREFIX: uniqueRedisPrefix(),
        // The rate limit keeps its counters in Redis: another role that must follow.
        PUBLISH_RATE_LIMIT: '1000000',
        SSE_RETRY_MS: '500',
      };
      for (let i = 0; i < 2; i++) instances.push(await ServiceProcess.start(env));
      const pids = instances.map((instance) => instance.pid);
      for (const instance of instances) {
        const ready = await http<{ details?: Record<string, { status: string }> }>(
          `${instance.url}/api/health/ready`,
        );
        expect([ready.status, ready.body.details?.redis]).toEqual([200, { status: 'up' }]);
      }

      // Two listeners on each instance; they reconnect after an error too, as the live page does.
      for (const instance of [...instances, ...instances]) {
        const listener = new EventSourceClient(`${instance.url}${LISTEN}`, {
          retryAfterErrors: true,
        });
        listeners.push(listener);
        listener.open();
      }
      await waitFor('the listeners to connect', () => listeners.every((l) => l.connected));

      // One publisher, alternating between the instances, one POST after the other.
      const run = randomBytes(4).toString('hex');
      const published: Published[] = [];
      const publishers = instances.map((instance) => {
        const client = new KeepAliveClient(instance.url);
        clients.push(client);
        return client;
      });
      let stop = false;
      const publishing = (async () => {
        for (let n = 1; !stop; n++) {
          const body = {
            userId: `sentinel-${run}`,
            type: 'username',
            name: `${run}-${n}`,
            changedAt: new Date(Date.UTC(2024, 0, 1) + n * 1000).toISOString(),
          };
          const outcome = await publishers[n % 2].request('POST', PUBLISH, body);
          published.push({ name: body.name, body, outcome, at: Date.now() });
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      })();
      const okInARow = (count: number) => {
        const last = published.slice(-count);
        return last.length === count && last.every((p) => p.outcome.status === 200);
      };

      try {
        await waitFor('20 acknowledged events', () => okInARow(20), { timeoutMs: 30_000 });
        const killedAt = Date.now();
        await group.master.kill();
        await waitFor(
          'the sentinels to promote the replica',
          async () => (await group.masterPort()) === group.replica.port,
          { timeoutMs: 60_000, intervalMs: 100 },
        );
        const promotedAt = Date.now();
        const before = published.length;
        await waitFor(
          'publishing to recover: 20 acknowledged in a row',
          () => published.length >= before + 20 && okInARow(20),
          { timeoutMs: 60_000 },
        );
        stop = true;
        await publishing;

        // A client retries what was not acknowledged (a repeat is stored once).
        const failed = published.filter((p) => p.outcome.status !== 200);
        for (const p of failed) {
          const retry = await publishers[0].request('POST', PUBLISH, p.body);
          expect([p.name, retry.status]).toEqual([p.name, 200]);
        }

        const stored = await db.query<{ id: string; name: string }>(
          `SELECT id::text AS id, name FROM name_change_events WHERE user_id = $1
            ORDER BY name_change_events.id`,
          [`sentinel-${run}`],
        );
        expect(stored.map((r) => r.name).sort()).toEqual(published.map((p) => p.name).sort());
        const storedIds = stored.map((r) => r.id);
        await waitFor(
          'every listener to have every stored event',
          () => listeners.every((l) => storedIds.every((id) => l.events.some((e) => e.id === id))),
          { timeoutMs: 30_000 },
        ).catch(() => undefined);

        const retried = new Set(failed.map((p) => p.name));
        const figures = {
          postsAnswered: published.length,
          non200: failed.map((p) =>
            p.outcome.status === undefined
              ? p.outcome.error
              : `${p.outcome.status} ${p.outcome.body}`,
          ),
          killToPromotionMs: promotedAt - killedAt,
          killToFirstAcknowledgedAfterPromotionMs:
            (published.find((p) => p.at > promotedAt && p.outcome.status === 200)?.at ??
              Number.NaN) - killedAt,
          listenerAttempts: listeners.map((l) => l.attempts),
          longestListenerGapMs: Math.max(...listeners.map((l) => l.longestGap)),
          eventsLostPerListener: listeners.map(
            (l) => storedIds.filter((id) => !l.events.some((e) => e.id === id)).length,
          ),
        };
        mkdirSync(ARTIFACTS, { recursive: true });
        writeFileSync(
          `${ARTIFACTS}sentinel-failover.json`,
          `${JSON.stringify(figures, null, 2)}\n`,
        );

        expect(figures.eventsLostPerListener).toEqual(listeners.map(() => 0));
        for (const listener of listeners) {
          // Every stored event, newly stored ones in id order; only a retried POST's event
          // may come again (re-broadcast with its id) or late.
          const fresh = listener.events.filter(
            (e) => !retried.has((JSON.parse(e.data) as { name: string }).name),
          );
          expect(fresh.map((e) => e.id)).toEqual(
            stored.filter((r) => !retried.has(r.name)).map((r) => r.id),
          );
        }
        // Not restarted: the same processes, still running.
        expect(instances.map((instance) => [instance.pid, instance.exit])).toEqual(
          pids.map((pid) => [pid, undefined]),
        );
      } finally {
        stop = true;
        await publishing;
      }
    },
    PROCESS_TIMEOUT_MS,
  );
});
