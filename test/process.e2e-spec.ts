import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { http } from './support/http.js';
import { freePort, waitFor } from './support/ports.js';

const START_TIMEOUT_MS = 60_000;

/** The built service as a user runs it (`npm start` runs dist/main.js; `npm test` builds it first). */
function startService(env: Record<string, string>): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, ['dist/main.js'], {
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return Object.assign(child, { output: () => output });
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
}

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
    const child = spawn(process.execPath, ['dist/main.js'], {
      env: { PATH: process.env.PATH, [variable]: value },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    expect(await exited(child)).toBe(1);
    expect(stderr).toBe(`${line}\n`);
    expect(stdout).toBe('');
  });

  describe('on the embedded defaults', () => {
    let dataDir: string;
    let child: ReturnType<typeof startService>;
    let port: number;

    beforeAll(async () => {
      port = await freePort();
      dataDir = await mkdtemp(join(tmpdir(), 'process-e2e-'));
      child = startService({ PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'info' });
      // The embedded database compiles its WebAssembly first: long on a loaded machine.
      const deadline = Date.now() + START_TIMEOUT_MS;
      while (!child.output().includes('Listening on port')) {
        if (Date.now() > deadline || child.exitCode !== null) {
          throw new Error(`Not listening (exit code ${child.exitCode}): ${child.output()}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }, START_TIMEOUT_MS + 10_000);

    afterAll(async () => {
      if (child.exitCode === null) {
        child.kill('SIGKILL');
        await exited(child);
      }
      await rm(dataDir, { recursive: true, force: true });
    });

    it('serves the history from the embedded database, with no Postgres or Redis configured', async () => {
      const res = await http(`http://127.0.0.1:${port}/api/users/123/prevnames`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ userId: '123', prevnames: [], code: 200 });
      const lines = child
        .output()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { msg: string });
      expect(lines.map((l) => l.msg)).toEqual(
        expect.arrayContaining([
          `Using the embedded PGlite database in ${join(dataDir, 'pgdata')}`,
          'Event bus: in-process (single instance; set REDIS_URL for several)',
          `Listening on port ${port}`,
        ]),
      );
    });

    it('logs "no active listeners" as a warning, without a stack', async () => {
      const before = child.output().length;
      const res = await http(`http://127.0.0.1:${port}/api/webhooks/prevnames`, {
        method: 'POST',
        json: {
          userId: 'nobody-listens',
          type: 'username',
          name: 'n',
          changedAt: '2024-01-01T00:00:00.000Z',
        },
      });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({
        message: 'Failed to deliver event: no active listeners',
        code: 500,
      });
      const logged = () =>
        child
          .output()
          .slice(before)
          .trim()
          .split('\n')
          .map(
            (l) => JSON.parse(l) as { level: number; msg: string; context?: string; err?: unknown },
          )
          .filter((l) => l.context === 'HttpExceptionFilter');
      const deadline = Date.now() + 5_000;
      while (logged().length === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(logged()).toEqual([
        expect.objectContaining({
          level: 40,
          msg: 'POST /api/webhooks/prevnames: Failed to deliver event: no active listeners',
        }),
      ]);
      expect(logged()[0].err).toBeUndefined();
    });

    it('refuses a second instance on the same DATA_DIR, with one line', async () => {
      const second = startService({
        PORT: String(await freePort()),
        DATA_DIR: dataDir,
        LOG_LEVEL: 'info',
      });
      let stderr = '';
      second.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      expect(await exited(second)).toBe(1);
      expect(stderr).toBe(
        `DATA_DIR ${dataDir} is in use by another instance (pid ${child.pid} on host ${hostname()}): run one instance per DATA_DIR, or set DATABASE_URL\n`,
      );
      expect(second.output()).toBe(stderr);
      // The first one is unharmed.
      const res = await http(`http://127.0.0.1:${port}/api/users/123/prevnames`);
      expect(res.status).toBe(200);
    });

    it('exits 0 on SIGTERM', async () => {
      child.kill('SIGTERM');
      expect(await exited(child)).toBe(0);
    });

    it(
      'starts on the DATA_DIR of an instance that was killed',
      async () => {
        const started = async () => {
          const next = startService({
            PORT: String(await freePort()),
            DATA_DIR: dataDir,
            LOG_LEVEL: 'info',
          });
          await waitFor(
            'the instance to listen',
            () => {
              if (next.exitCode !== null) throw new Error(next.output());
              return next.output().includes('Listening on port');
            },
            { timeoutMs: START_TIMEOUT_MS },
          );
          return next;
        };
        const killed = await started();
        killed.kill('SIGKILL');
        expect(await exited(killed)).toBeNull();
        child = await started();
        child.kill('SIGTERM');
        expect(await exited(child)).toBe(0);
      },
      3 * START_TIMEOUT_MS,
    );
  });
});
