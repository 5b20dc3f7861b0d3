import { LISTEN } from './api.js';
import { uniqueRedisPrefix } from './app.js';
import { TestDatabase } from './database.js';
import { ThrowawayRedis } from './redis-server.js';
import { ensureBuilt, ServiceProcess } from './service-process.js';
import { streamsClosedAfterEach } from './sse.js';

/** Starting a process takes seconds, more on a loaded 2-core machine. */
export const PROCESS_TIMEOUT_MS = 180_000;

/**
 * Instances as processes (`node dist/main.js`) sharing a Postgres database and a Redis of
 * the describe block's own (a throwaway redis-server), killed after the block; streams opened
 * through `listen` are closed after each test. Call in the describe block.
 */
export function useInstanceProcesses() {
  let redis: ThrowawayRedis;
  let db: TestDatabase;
  let env: Record<string, string>;
  const services: ServiceProcess[] = [];
  const open = streamsClosedAfterEach();

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

  return {
    get db() {
      return db;
    },
    /** Another instance, ready; `extra` on top of the shared environment. */
    start: async (extra: Record<string, string> = {}) => {
      const service = await ServiceProcess.start({ ...env, ...extra });
      services.push(service);
      return service;
    },
    /** A stream on `service`, answered 200. */
    listen: async (service: ServiceProcess, query = '', headers = {}) => {
      const stream = await open(`${service.url}${LISTEN}${query}`, headers);
      expect(stream.status).toBe(200);
      return stream;
    },
    /** The stored events of `userId`, oldest id first. */
    stored: (userId: string) =>
      db.query<{ id: string; name: string }>(
        'SELECT id::text AS id, name FROM name_change_events WHERE user_id = $1 ORDER BY name_change_events.id',
        [userId],
      ),
  };
}
