import { searchMigrations } from '../src/search/migrations/index.js';
import { uniqueRedisPrefix } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { REDIS_URL } from './support/environment.js';
import { http } from './support/http.js';
import { PROCESS_TIMEOUT_MS } from './support/instances.js';
import { migrateAllBut } from './support/schema.js';
import { waitFor } from './support/ports.js';
import { SEARCH, SEARCH_AUTH, SEARCH_TOKEN, type SearchBody } from './support/search.js';
import { ensureBuilt, ServiceProcess } from './support/service-process.js';

const EVENTS = 1_000_000;
/** Seeding a million rows (and their four indexes) on a loaded 2-core machine. */
const SEED_TIMEOUT_MS = 600_000;

/**
 * An upgrade on a large table: the schema as it was before the search, a million events,
 * then two instances started at once. One builds the search's index CONCURRENTLY under the
 * migration lock while the other waits for the lock: neither may wait for the other.
 */
describe('two instances starting at once on 1,000,000 events, the search index not yet built', () => {
  let db: TestDatabase;
  const services: ServiceProcess[] = [];

  beforeAll(async () => {
    ensureBuilt();
    db = await TestDatabase.create();
    await migrateAllBut(db, searchMigrations);
    await db.query(
      `INSERT INTO name_change_events (user_id, type, name, changed_at)
       SELECT 'user-' || (n % 100000), CASE WHEN n % 2 = 0 THEN 'username' ELSE 'displayname' END,
              'Name-' || n, timestamptz '2024-01-01T00:00:00Z' + n * interval '1 second'
         FROM generate_series(1, ${EVENTS}) AS n`,
    );
    await db.query('ANALYZE name_change_events');
  }, SEED_TIMEOUT_MS);

  afterAll(async () => {
    await Promise.all(services.map((service) => service.stop('SIGKILL')));
    await db?.drop();
  });

  it(
    'both start, the index is built once and valid, and each answers from it (logged by token)',
    async () => {
      expect(
        await db.query(`SELECT 1 FROM pg_class WHERE relname = 'name_change_events_search_idx'`),
      ).toEqual([]);
      const env = {
        DATABASE_URL: db.url,
        REDIS_URL,
        REDIS_KEY_PREFIX: uniqueRedisPrefix(),
        SEARCH_TOKEN,
        LOG_LEVEL: 'info',
      };
      services.push(...(await Promise.all([ServiceProcess.start(env), ServiceProcess.start(env)])));

      expect(
        await db.query<{ valid: boolean }>(
          `SELECT indisvalid AS valid FROM pg_index
            WHERE indexrelid = 'name_change_events_search_idx'::regclass`,
        ),
      ).toEqual([{ valid: true }]);
      expect(
        await db.query(
          `SELECT name FROM migrations WHERE name LIKE 'IndexNameChangeEventsSearch%'`,
        ),
      ).toEqual([{ name: 'IndexNameChangeEventsSearch1769100000000' }]);

      for (const [i, service] of services.entries()) {
        const n = 123_456 + i;
        const res = await http<SearchBody>(`${service.url}${SEARCH}?name=NAME-${n}`, {
          headers: SEARCH_AUTH,
        });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({
          name: `NAME-${n}`,
          matches: [
            {
              userId: `user-${n % 100000}`,
              type: n % 2 === 0 ? 'username' : 'displayname',
              name: `Name-${n}`,
              changedAt: new Date(Date.UTC(2024, 0, 1) + n * 1000).toISOString(),
            },
          ],
          code: 200,
        });
      }
      // The log line is the feature: who searched (which token, never the token), not for what.
      const searchLines = (service: ServiceProcess) =>
        service.output
          .split('\n')
          .slice(0, -1)
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as { msg?: string; context?: string })
          .filter((line) => line.context === 'Search')
          .map((line) => line.msg);
      const expected = [
        'Name search by the search-token: match=exact type=any limit=100: 1 match(es)',
      ];
      await waitFor('the search log lines', () =>
        services.every((service) => searchLines(service).length === 1),
      );
      for (const service of services) {
        expect(searchLines(service)).toEqual(expected);
        expect(service.output).not.toContain(SEARCH_TOKEN);
        // Nor the name: no access log line for the search, whose URL would carry it.
        expect(service.output).not.toMatch(/name-12345[67]/i);
      }
    },
    PROCESS_TIMEOUT_MS,
  );
});
