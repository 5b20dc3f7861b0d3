import { PUBLISHED } from './support/api.js';
import { uniqueRedisPrefix, useApp, type AppFixture } from './support/app.js';
import { REDIS_URL } from './support/environment.js';
import { nameEvent, uniqueUserId, type NameEventBody } from './support/events.js';
import { http, post } from './support/http.js';
import { metric } from './support/metrics.js';
import { waitFor } from './support/ports.js';
import { ensureBuilt, ServiceProcess } from './support/service-process.js';
import { TestDatabase } from './support/database.js';
import { streamsClosedAfterEach } from './support/sse.js';

const LISTEN = '/api/webhooks/prevnames/listen';
const PUBLISH = '/api/webhooks/prevnames';
const DAY_MS = 86_400_000;
const RUNS_COMPLETED = 'name_history_retention_runs_total{outcome="completed"}';
const DELETED = 'name_history_retention_deleted_total';
/** Starting a process takes seconds, more on a loaded 2-core machine. */
const PROCESS_TIMEOUT_MS = 180_000;

function event(userId: string, name: string, ageMs: number): NameEventBody {
  return nameEvent({ userId, name, changedAt: new Date(Date.now() - ageMs).toISOString() });
}

/** Publishes each of `bodies` through `url`, with a listener open so that each is stored. */
async function publishAll(fx: AppFixture, bodies: NameEventBody[], url = fx.url): Promise<void> {
  await fx.listen(`?userId=${uniqueUserId('listener')}`);
  for (const body of bodies) {
    expect((await post(`${url}${PUBLISH}`, body)).body).toEqual(PUBLISHED);
  }
}

async function namesOf(url: string, userId: string): Promise<string[]> {
  const res = await http<{ prevnames: { name: string }[] }>(`${url}/api/users/${userId}/prevnames`);
  return res.body.prevnames.map((e) => e.name);
}

describe('RETENTION_DAYS unset on PostgreSQL and Redis', () => {
  const fx = useApp({ env: { RETENTION_INTERVAL_MS: '100' } });

  it('keeps everything', async () => {
    const userId = uniqueUserId('ancient');
    await publishAll(fx, [event(userId, 'from-2001', 25 * 365 * DAY_MS)]);
    expect(await namesOf(fx.url, userId)).toEqual(['from-2001']);
    expect(await metric(fx.url, RUNS_COMPLETED)).toBe(0);
  });
});

describe('RETENTION_DAYS at start-up on PostgreSQL and Redis', () => {
  // Stores the entries with retention off; an instance with it on starts afterwards.
  const fx = useApp();

  it('deletes every entry older than the limit at start-up, batch after batch, in one run', async () => {
    const batches = uniqueUserId('batches');
    const ancient = uniqueUserId('ancient');
    await publishAll(fx, [
      ...Array.from({ length: 25 }, (_, i) => event(batches, `old-${i}`, 2 * DAY_MS + i * 1000)),
      event(batches, 'a-day-old', DAY_MS - 60_000),
      event(batches, 'new', 0),
      event(ancient, 'still-old', 3 * DAY_MS),
    ]);
    expect(await namesOf(fx.url, batches)).toHaveLength(27);

    // One run only within the test: the next is a minute away.
    const app = await fx.startInstance({
      RETENTION_DAYS: '1',
      RETENTION_INTERVAL_MS: '60000',
      RETENTION_BATCH_SIZE: '10',
    });
    await waitFor('the first run', async () => (await metric(app.url, RUNS_COMPLETED)) === 1);
    expect(await metric(app.url, DELETED)).toBe(26);
    expect(await namesOf(app.url, batches)).toEqual(['a-day-old', 'new']);
    expect(await namesOf(app.url, ancient)).toEqual([]);
  });
});

describe('RETENTION_DAYS every RETENTION_INTERVAL_MS on PostgreSQL and Redis', () => {
  const fx = useApp({ env: { RETENTION_DAYS: '1', RETENTION_INTERVAL_MS: '100' } });

  it('runs again, while publishing goes on', async () => {
    const userId = uniqueUserId('periodic');
    const runs = await metric(fx.url, RUNS_COMPLETED);
    await publishAll(fx, [event(userId, 'expired', DAY_MS + 60_000), event(userId, 'current', 0)]);
    await waitFor(
      'a later run to delete the expired entry',
      async () => (await namesOf(fx.url, userId)).length === 1,
    );
    expect(await namesOf(fx.url, userId)).toEqual(['current']);
    expect(await metric(fx.url, RUNS_COMPLETED)).toBeGreaterThan(runs);
    expect(await metric(fx.url, 'name_history_retention_runs_total{outcome="failed"}')).toBe(0);
  });
});

describe('RETENTION_DAYS on the embedded defaults (PGlite, one connection)', () => {
  const fx = useApp({
    backend: 'embedded',
    env: { RETENTION_DAYS: '7', RETENTION_INTERVAL_MS: '100', RETENTION_BATCH_SIZE: '3' },
  });

  it('deletes the expired entries and keeps the others', async () => {
    const userId = uniqueUserId('embedded');
    const deleted = await metric(fx.url, DELETED);
    await publishAll(fx, [
      ...Array.from({ length: 8 }, (_, i) => event(userId, `old-${i}`, 8 * DAY_MS + i)),
      event(userId, 'kept', 6 * DAY_MS),
    ]);
    await waitFor(
      'the expired entries to be deleted',
      async () => (await namesOf(fx.url, userId)).length === 1,
    );
    expect(await namesOf(fx.url, userId)).toEqual(['kept']);
    expect(await metric(fx.url, DELETED)).toBe(deleted + 8);
  });
});

describe('the audit log (the service as a process, LOG_LEVEL=info)', () => {
  let db: TestDatabase;
  let service: ServiceProcess;
  const TOKEN = 'an-admin-token-for-the-audit-log';
  const AUTH = { authorization: `Bearer ${TOKEN}` };
  /** Names that must never reach the log. */
  const SECRETS = ['Secret-Name-Alpha', 'Secret-Name-Beta', 'Secret-Name-Gamma'];
  const open = streamsClosedAfterEach();

  beforeAll(async () => {
    ensureBuilt();
    db = await TestDatabase.create();
    service = await ServiceProcess.start({
      DATABASE_URL: db.url,
      REDIS_URL,
      REDIS_KEY_PREFIX: uniqueRedisPrefix(),
      ADMIN_TOKEN: TOKEN,
      RETENTION_DAYS: '1',
      RETENTION_INTERVAL_MS: '100',
      LOG_LEVEL: 'info',
    });
  }, PROCESS_TIMEOUT_MS);

  afterAll(async () => {
    await service?.stop('SIGTERM');
    await db?.drop();
  });

  it('logs each erasure, opt-out, opt-in and retention run with the user id and counts, never a name', async () => {
    const admin = (method: string, path: string) =>
      http(`${service.url}/api/users/${path}`, { method, headers: AUTH });
    await open(`${service.url}${LISTEN}?userId=${uniqueUserId('listener')}`);
    for (const body of [
      event('audit-erased', SECRETS[0], 0),
      event('audit-erased', SECRETS[1], 1000),
      event('audit-opted', SECRETS[2], 0),
      event('audit-expired', 'Expired-Name', 2 * DAY_MS),
    ]) {
      expect((await post(`${service.url}${PUBLISH}`, body)).status).toBe(200);
    }
    expect((await admin('DELETE', 'audit-erased/prevnames')).status).toBe(200);
    expect((await admin('PUT', 'audit-opted/opt-out')).status).toBe(200);
    expect(
      (await post(`${service.url}${PUBLISH}`, event('audit-opted', 'Refused', 0))).status,
    ).toBe(403);
    expect((await admin('DELETE', 'audit-opted/opt-out')).status).toBe(200);
    expect((await admin('DELETE', 'audit-opted/opt-out')).status).toBe(200);

    // Whole lines only: the last may still be on its way.
    const messages = () =>
      service.output
        .split('\n')
        .slice(0, -1)
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { msg?: string; context?: string })
        .filter((line) => line.context === 'Privacy' || line.context === 'Retention')
        .map((line) => line.msg);
    const expected = [
      'Retention: entries older than 1 day(s) are deleted every 100 ms',
      'Erased the name history of user audit-erased: 2 entries deleted',
      'Opted out user audit-opted: 1 entries deleted; nothing is recorded for them from now on',
      'Opted user audit-opted back in: recording resumes',
      'Opt-in of user audit-opted: the user was not opted out',
    ];
    // The child's output arrives when it arrives: wait for every line, then look at them.
    const retentionRun = /^Retention run: 1 entries changed before \S+ deleted in 1 batch\(es\)$/;
    await waitFor('the audit lines', () => {
      const lines = messages();
      return (
        expected.every((line) => lines.includes(line)) &&
        lines.some((line) => retentionRun.test(line ?? ''))
      );
    });
    expect(messages()).toEqual(expect.arrayContaining(expected));
    for (const name of [...SECRETS, 'Refused', 'Expired-Name']) {
      expect(service.output).not.toContain(name);
    }
  });
});
