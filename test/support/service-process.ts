import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, waitFor } from './ports.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIST_MAIN = join(ROOT, 'dist', 'main.js');
/**
 * A private build, when dist/ is stale, laid out as the repository is (`package.json` beside
 * `dist/`, which the code reads and which makes the files ES modules); `node_modules` is
 * found up the tree.
 */
const PRIVATE_BUILD = join(ROOT, 'test', 'artifacts', 'service-build');

/** The newest modification time of the files under `dir`. */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) {
      newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
    }
  }
  return newest;
}

function isFresh(main: string, sources: number): boolean {
  return existsSync(main) && statSync(main).mtimeMs >= sources;
}

let main: string | undefined;

/**
 * The built service's entry: dist/main.js when it is newer than src/ (`npm test` builds it
 * first), else a build of its own under test/artifacts/, compiled with tsc. That build never
 * touches dist/, which others may be running, and type errors elsewhere in a tree being
 * edited do not stop it (tsc emits all the same).
 */
export function ensureBuilt(): string {
  if (main) return main;
  const sources = newestMtime(join(ROOT, 'src'));
  if (isFresh(DIST_MAIN, sources)) return (main = DIST_MAIN);
  const privateMain = join(PRIVATE_BUILD, 'dist', 'main.js');
  if (isFresh(privateMain, sources)) return (main = privateMain);
  const staging = `${PRIVATE_BUILD}-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  try {
    execFileSync(
      process.execPath,
      [
        join(ROOT, 'node_modules/typescript/bin/tsc'),
        '-p',
        'tsconfig.build.json',
        '--outDir',
        join(staging, 'dist'),
      ],
      { cwd: ROOT, stdio: 'pipe', timeout: 180_000 },
    );
  } catch (error) {
    if (!existsSync(join(staging, 'dist', 'main.js'))) throw error;
  }
  copyFileSync(join(ROOT, 'package.json'), join(staging, 'package.json'));
  // The assets nest-cli.json copies.
  if (existsSync(join(ROOT, 'src', 'public'))) {
    cpSync(join(ROOT, 'src', 'public'), join(staging, 'dist', 'public'), { recursive: true });
  }
  rmSync(PRIVATE_BUILD, { recursive: true, force: true });
  renameSync(staging, PRIVATE_BUILD);
  return (main = privateMain);
}

/**
 * How long a start may take: the embedded database compiles its WebAssembly first, which is
 * long on a loaded machine.
 */
export const START_TIMEOUT_MS = 60_000;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SpawnOptions {
  /** The port to listen on; by default a free one. */
  port?: number;
  /**
   * Another build of the service: a directory (the image's tree, say) and the command that
   * runs it there, as a Dockerfile's WORKDIR and CMD say, with no LOG_LEVEL but `env`'s.
   * By default the service is `node <ensureBuilt()>`, in an empty directory of its own, with
   * LOG_LEVEL `warn` unless `env` says.
   */
  tree?: { dir: string; command: readonly string[] };
}

/**
 * The built service (`node dist/main.js`) as a child process on a free loopback port, so a
 * test can kill it (SIGKILL) or stop it (SIGTERM) as an orchestrator would. It runs in an
 * empty working directory (or a tree's own) with only the environment given (no `.env` is read).
 */
export class ServiceProcess {
  /** What it wrote to stdout and stderr, as it came. */
  output = '';
  stdout = '';
  stderr = '';
  /** Resolves once it has exited and its output is all in. */
  readonly exited: Promise<Exit>;
  exit?: Exit;

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    /** Its working directory when it is the process's own, removed once it has exited. */
    private readonly ownDir?: string,
  ) {
    child.stdout?.on('data', (chunk: Buffer) => {
      this.output += chunk.toString();
      this.stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      this.output += chunk.toString();
      this.stderr += chunk.toString();
    });
    this.exited = new Promise((resolve) =>
      child.once('close', (code, signal) => {
        this.exit = { code, signal };
        if (this.ownDir) rmSync(this.ownDir, { recursive: true, force: true });
        resolve(this.exit);
      }),
    );
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /**
   * Starts the service without waiting for it (to see it refuse to start, say), on a free
   * port or on `port`. A `PORT` in `env` replaces either (to give it an invalid one).
   */
  static async spawn(
    env: Record<string, string>,
    { port, tree }: SpawnOptions = {},
  ): Promise<ServiceProcess> {
    port ??= await freePort();
    const ownDir = tree ? undefined : mkdtempSync(join(tmpdir(), 'service-process-'));
    const [program, ...args] = tree?.command ?? ['node', ensureBuilt()];
    // `node` is the Node running the tests (the one the suite checks), not whichever is first
    // on the PATH.
    const child = spawn(program === 'node' ? process.execPath : program, args, {
      cwd: tree?.dir ?? ownDir,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        // Quiet, unless it is a tree run as its image runs it (the image sets no LOG_LEVEL).
        ...(tree ? {} : { LOG_LEVEL: 'warn' }),
        PORT: String(port),
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new ServiceProcess(child, port, ownDir);
  }

  /**
   * Starts the service and resolves once it is ready (GET /api/health/ready is 200), on a
   * free port or on `port` (to start an instance again where its proxy expects it).
   */
  static async start(
    env: Record<string, string>,
    options: SpawnOptions = {},
  ): Promise<ServiceProcess> {
    const { PORT: _ignored, ...rest } = env;
    const service = await ServiceProcess.spawn(rest, options);
    try {
      const outcome = await waitFor(
        `the service on port ${service.port} to be ready`,
        async () => {
          if (service.exit) return 'exited';
          const res = await fetch(`${service.url}/api/health/ready`);
          await res.arrayBuffer();
          return res.status === 200 && 'ready';
        },
        { timeoutMs: START_TIMEOUT_MS, intervalMs: 100 },
      );
      if (outcome === 'exited') {
        await service.exited;
        throw new Error(`The service exited (${JSON.stringify(service.exit)}):\n${service.output}`);
      }
    } catch (error) {
      await service.stop('SIGKILL');
      throw error;
    }
    return service;
  }

  signal(signal: NodeJS.Signals): void {
    if (!this.exit) this.child.kill(signal);
  }

  /** Sends `signal` (if still running) and waits for the exit. */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<Exit> {
    this.signal(signal);
    return this.exited;
  }
}
