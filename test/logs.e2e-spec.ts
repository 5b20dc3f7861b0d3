import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { TestDatabase } from './support/database.js';
import { http } from './support/http.js';
import { freePort, waitFor } from './support/ports.js';
import { ensureBuilt, START_TIMEOUT_MS } from './support/service-process.js';

/**
 * The built service with a terminal for its stdout and stderr, as a person runs `npm start`:
 * util-linux `script` gives it a pseudo-terminal and copies what it writes there.
 */
class ServiceOnTerminal {
  output = '';
  private readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    cwd: string,
  ) {
    child.stdout!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((resolve) =>
      child.once('close', () => {
        rmSync(cwd, { recursive: true, force: true });
        resolve();
      }),
    );
  }

  static async start(env: Record<string, string>): Promise<ServiceOnTerminal> {
    const port = await freePort();
    const cwd = mkdtempSync(join(tmpdir(), 'service-terminal-'));
    const command = [process.execPath, ensureBuilt()].map((arg) => `'${arg}'`).join(' ');
    const child = spawn('script', ['--quiet', '--flush', '--command', command, '/dev/null'], {
      cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: String(port), ...env },
      // Its own words on stderr ("Session terminated…") are not the service's.
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const service = new ServiceOnTerminal(child, `http://127.0.0.1:${port}`, cwd);
    await service.until(/Listening on port/, START_TIMEOUT_MS);
    return service;
  }

  /** The lines written so far, without colours or the terminal's carriage returns. */
  get lines(): string[] {
    return stripVTControlCharacters(this.output)
      .split(/\r?\n/)
      .filter((line) => line !== '');
  }

  until(pattern: RegExp, timeoutMs = 15_000): Promise<string> {
    return waitFor(
      `a log line matching ${pattern}`,
      () => this.lines.find((l) => pattern.test(l)),
      {
        timeoutMs,
      },
    );
  }

  /** `script` passes SIGTERM on to the service, which drains and exits. */
  async stop(): Promise<void> {
    this.child.kill('SIGTERM');
    await this.exited;
  }
}

/**
 * Logs for a person at a terminal (docs/operations.md, "Logs"): readable lines unless NODE_ENV is
 * `production`. On a pipe the service writes JSON lines (test/process.e2e-spec.ts reads them).
 */
describe('the service on a terminal', () => {
  let db: TestDatabase;
  let service: ServiceOnTerminal | undefined;

  beforeAll(async () => {
    db = await TestDatabase.create();
  });

  afterEach(async () => {
    await service?.stop();
    service = undefined;
  });

  afterAll(async () => {
    await db.drop();
  });

  it('writes readable lines: time, level, context and message, the details on the same line', async () => {
    service = await ServiceOnTerminal.start({ DATABASE_URL: db.url, LOG_LEVEL: 'info' });
    const port = new URL(service.url).port;
    expect(await service.until(/Listening on port/)).toMatch(
      new RegExp(
        `^\\[\\d{2}:\\d{2}:\\d{2}\\.\\d{3}\\] INFO: \\[Bootstrap\\] Listening on port ${port}$`,
      ),
    );
    // The path and the route's template; never the query string.
    expect((await http(`${service.url}/api/users/terminal/prevnames?limit=5`)).status).toBe(200);
    expect(await service.until(/request completed/)).toMatch(
      /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: request completed \{"req":\{"id":"[^"]+","method":"GET","url":"\/api\/users\/terminal\/prevnames","remoteAddress":"[^"]+"\},"route":"\/api\/users\/\{:userId\}\/prevnames","res":\{"statusCode":200\},"responseTime":\d+\}$/,
    );
    expect(service.lines.filter((line) => line.startsWith('{'))).toEqual([]);
  });

  it('writes JSON lines with NODE_ENV=production', async () => {
    service = await ServiceOnTerminal.start({
      DATABASE_URL: db.url,
      LOG_LEVEL: 'info',
      NODE_ENV: 'production',
    });
    const port = new URL(service.url).port;
    const records = service.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records).toContainEqual(
      expect.objectContaining({
        level: 30,
        context: 'Bootstrap',
        msg: `Listening on port ${port}`,
      }),
    );
  });
});
