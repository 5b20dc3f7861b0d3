import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { redisEnv, startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { REDIS_URL } from './support/environment.js';
import { http, post } from './support/http.js';
import { metric } from './support/metrics.js';
import { waitFor } from './support/ports.js';
import { ensureBuilt, ServiceProcess } from './support/service-process.js';
import { SseStream } from './support/sse.js';

const LISTEN = '/api/webhooks/prevnames/listen';
const PUBLISH = '/api/webhooks/prevnames';
const DAY_MS = 86_400_000;
const RUNS_COMPLETED = 'name_history_retention_runs_total{outcome="completed"}';
const DELETED = 'name_history_retention_deleted_total';
/** Starting a process takes seconds, more on a loaded 2-core machine. */
const PROCESS_TIMEOUT_MS = 180_000;

interface Body {
  userId: string;
  type: 'username';
  name: string;
  changedAt: string;
}

function event(userId: string, name: string, ageMs: number): Body {
  return {
    userId,
    type: 'username',
    name,
    changedAt: new Date(Date.now() - ageMs).toISOString(),
  };
}

async function publishAll(app: TestApp, bodies: Body[]): Promise<void> {
  const keeper = await SseStream.open(`${app.url}${LISTEN}?userId=nobody`);
  try {
    for (const body of bodies) {
      expect((await post(`${app.url}${PUBLISH}`, body)).status).toBe(200);
    }
  } finally {
    keeper.close();
  }
}

async function namesOf(app: TestApp, userId: string): Promise<string[]> {
  const res = await http<{ prevnames: { name: string }[] }>(
    `${app.url}/api/users/${userId}/prevnames`,
  );
  return res.body.prevnames.map((e) => e.name);
}

describe('RETENTION_DAYS on PostgreSQL and Redis', () => {
  let db: TestDatabase;
  const apps: TestApp[] = [];
  const start = async (env: Record<string, string>) => {
    const app = await startApp({ ...redisEnv(db.url), ...env });
    apps.push(app);
    return app;
  };

  beforeAll(async () => {
    db = await TestDatabase.create();
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await db.drop();
  });

  it('keeps everything by default', async () => {
    const app = await start({ RETENTION_INTERVAL_MS: '100' });
    await publishAll(app, [event('ancient', 'from-2001', 25 * 365 * DAY_MS)]);
    expect(await namesOf(app, 'ancient')).toEqual(['from-2001']);
    expect(await metric(app.url, RUNS_COMPLETED)).toBe(0);
  });

  it('deletes every entry older than the limit at start-up, batch after batch, in one run', async () => {
    const seeder = await start({});
    await publishAll(seeder, [
      ...Array.from({ length: 25 }, (_, i) => event('batches', `old-${i}`, 2 * DAY_MS + i * 1000)),
      event('batches', 'a-day-old', DAY_MS - 60_000),
      event('batches', 'new', 0),
      event('ancient', 'still-old', 3 * DAY_MS),
    ]);
    expect(await namesOf(seeder, 'batches')).toHaveLength(27);

    // One run only within the test: the next is a minute away.
    const app = await start({
      RETENTION_DAYS: '1',
      RETENTION_INTERVAL_MS: '60000',
      RETENTION_BATCH_SIZE: '10',
    });
    await waitFor('the first run', async () => (await metric(app.url, RUNS_COMPLETED)) === 1);
    expect(await metric(app.url, DELETED)).toBe(27);
    expect(await namesOf(app, 'batches')).toEqual(['a-day-old', 'new']);
    expect(await namesOf(app, 'ancient')).toEqual([]);
  });

  it('runs again every RETENTION_INTERVAL_MS, while publishing goes on', async () => {
    const app = await start({ RETENTION_DAYS: '1', RETENTION_INTERVAL_MS: '100' });
    const runs = await metric(app.url, RUNS_COMPLETED);
    await publishAll(app, [
      event('periodic', 'expired', DAY_MS + 60_000),
      event('periodic', 'current', 0),
    ]);
    await waitFor('a later run to delete the expired entry', async () => {
      return (await namesOf(app, 'periodic')).length === 1;
    });
    expect(await namesOf(app, 'periodic')).toEqual(['current']);
    expect(await metric(app.url, RUNS_COMPLETED)).toBeGreaterThan(runs);
    expect(await metric(app.url, 'name_history_retention_runs_total{outcome="failed"}')).toBe(0);
  });
});

describe('RETENTION_DAYS on the embedded defaults (PGlite, one connection)', () => {
  let dataDir: string;
  let app: TestApp;

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'privacy-retention-'));
    app = await startApp({
      DATA_DIR: dataDir,
      RETENTION_DAYS: '7',
      RETENTION_INTERVAL_MS: '100',
      RETENTION_BATCH_SIZE: '3',
    });
  });

  afterAll(async () => {
    await app.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('deletes the expired entries and keeps the others', async () => {
    await publishAll(app, [
      ...Array.from({ length: 8 }, (_, i) => event('embedded', `old-${i}`, 8 * DAY_MS + i)),
      event('embedded', 'kept', 6 * DAY_MS),
    ]);
    await waitFor('the expired entries to be deleted', async () => {
      return (await namesOf(app, 'embedded')).length === 1;
    });
    expect(await namesOf(app, 'embedded')).toEqual(['kept']);
    expect(await metric(app.url, DELETED)).toBe(8);
  });
});

describe('the audit log (the service as a process, LOG_LEVEL=info)', () => {
  let db: TestDatabase;
  let service: ServiceProcess;
  const TOKEN = 'an-admin-token-for-the-audit-log';
  const AUTH = { authorization: `Bearer ${TOKEN}` };
  /** Names that must never reach the log. */
  const SECRETS = ['Secret-Name-Alpha', 'Secret-Name-Beta', 'Secret-Name-Gamma'];

  beforeAll(async () => {
    ensureBuilt();
    db = await TestDatabase.create();
    service = await ServiceProcess.start({
      DATABASE_URL: db.url,
      REDIS_URL,
      REDIS_KEY_PREFIX: `audit_${process.pid}`,
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
    const keeper = await SseStream.open(`${service.url}${LISTEN}?userId=nobody`);
    for (const body of [
      event('audit-erased', SECRETS[0], 0),
      event('audit-erased', SECRETS[1], 1000),
      event('audit-opted', SECRETS[2], 0),
      event('audit-expired', 'Expired-Name', 2 * DAY_MS),
    ]) {
      expect((await post(`${service.url}${PUBLISH}`, body)).status).toBe(200);
    }
    keeper.close();
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
