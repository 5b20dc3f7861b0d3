import { mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { historyPath, NO_LISTENERS, PUBLISH } from './support/api.js';
import { nameEvent } from './support/events.js';
import { http } from './support/http.js';
import { waitFor } from './support/ports.js';
import { ServiceProcess, START_TIMEOUT_MS } from './support/service-process.js';

interface LogLine {
  level: number;
  msg: string;
  context?: string;
  err?: unknown;
}

/** The JSON log lines of `text`. */
function logLines(text: string): LogLine[] {
  return text
    .trim()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as LogLine);
}

/** The built service as a user runs it (`npm start` runs dist/main.js). */
describe('the service process', () => {
  it.each([
    ['PORT', 'abc', 'Invalid configuration: PORT must be an integer number (got "abc")'],
    [
      'SSE_KEEPALIVE_MS',
      '10',
      'Invalid configuration: SSE_KEEPALIVE_MS must not be less than 1000 (got "10")',
    ],
    [
      'DATABASE_URL',
      'mysql://x',
      'Invalid configuration: DATABASE_URL must be a postgres:// or postgresql:// URL',
    ],
    [
      'LOG_LEVEL',
      'loud',
      'Invalid configuration: LOG_LEVEL must be one of the following values: fatal, error, warn, info, debug, trace, silent (got "loud")',
    ],
  ])('exits with one line naming a bad %s', async (variable, value, line) => {
    const service = await ServiceProcess.spawn({ [variable]: value });
    expect(await service.exited).toEqual({ code: 1, signal: null });
    expect(service.stderr).toBe(`${line}\n`);
    expect(service.stdout).toBe('');
  });

  describe('on the embedded defaults', () => {
    let dataDir: string;
    let service: ServiceProcess;

    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'process-e2e-'));
      service = await ServiceProcess.start({ DATA_DIR: dataDir, LOG_LEVEL: 'info' });
    }, START_TIMEOUT_MS + 10_000);

    afterAll(async () => {
      await service?.stop('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
    });

    it('serves the history from the embedded database, with no Postgres or Redis configured', async () => {
      const res = await http(`${service.url}${historyPath('123')}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ userId: '123', prevnames: [], code: 200 });
      const expected = [
        `Using the embedded PGlite database in ${join(dataDir, 'pgdata')}`,
        'Event bus: in-process (single instance; set REDIS_URL for several)',
        `Listening on port ${service.port}`,
      ];
      await waitFor('the start-up to be logged', () => {
        const messages = logLines(service.stdout).map((l) => l.msg);
        return expected.every((message) => messages.includes(message));
      });
      expect(logLines(service.stdout).map((l) => l.msg)).toEqual(expect.arrayContaining(expected));
    });

    it('logs "no active listeners" as a warning, without a stack', async () => {
      const before = service.stdout.length;
      const res = await http(`${service.url}${PUBLISH}`, {
        method: 'POST',
        json: nameEvent({ userId: 'nobody-listens', name: 'n' }),
      });
      expect(res.status).toBe(500);
      expect(res.body).toEqual(NO_LISTENERS);
      const logged = () =>
        logLines(service.stdout.slice(before)).filter((l) => l.context === 'HttpExceptionFilter');
      await waitFor('the answer to be logged', () => logged().length > 0);
      expect(logged()).toEqual([
        expect.objectContaining({
          level: 40,
          msg: 'POST /api/webhooks/prevnames: Failed to deliver event: no active listeners',
        }),
      ]);
      expect(logged()[0].err).toBeUndefined();
    });

    it('refuses a second instance on the same DATA_DIR, with one line', async () => {
      const second = await ServiceProcess.spawn({ DATA_DIR: dataDir, LOG_LEVEL: 'info' });
      expect(await second.exited).toEqual({ code: 1, signal: null });
      expect(second.stderr).toBe(
        `DATA_DIR ${dataDir} is in use by another instance (pid ${service.pid} on host ${hostname()}): run one instance per DATA_DIR, or set DATABASE_URL\n`,
      );
      expect(second.output).toBe(second.stderr);
      // The first one is unharmed.
      const res = await http(`${service.url}${historyPath('123')}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ userId: '123', prevnames: [], code: 200 });
    });

    it('exits 0 on SIGTERM', async () => {
      expect(await service.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    });

    it(
      'starts on the DATA_DIR of an instance that was killed',
      async () => {
        const start = () => ServiceProcess.start({ DATA_DIR: dataDir, LOG_LEVEL: 'info' });
        const killed = await start();
        expect(await killed.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
        service = await start();
        expect(await service.stop('SIGTERM')).toEqual({ code: 0, signal: null });
      },
      3 * START_TIMEOUT_MS,
    );
  });
});
