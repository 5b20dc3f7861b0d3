import { spawn, type ChildProcess } from 'node:child_process';
import { freePort, waitFor } from './ports.js';
import { ping, rawCommand } from './redis-protocol.js';

/**
 * A throwaway `redis-server` of the test's own, on a free loopback port, with no persistence:
 * the fault tests kill it and start it again on the same port without touching the shared one.
 */
export class ThrowawayRedis {
  private process?: RedisProcess;

  private constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.process?.running ?? false;
  }

  static async start(): Promise<ThrowawayRedis> {
    const redis = new ThrowawayRedis(await freePort());
    await redis.restart();
    return redis;
  }

  /** Starts the server (again) on the same port; resolves once it answers PING. */
  async restart(): Promise<void> {
    if (this.running) throw new Error('redis-server is already running');
    this.process = await RedisProcess.start(this.port, serverArgs);
  }

  /** Kills the server abruptly (SIGKILL): every connection drops at once, as in a crash. */
  async kill(): Promise<void> {
    await this.process?.kill();
  }

  /**
   * Stops the server without closing anything (SIGSTOP, as `docker pause` does): connections
   * stay open and commands get no answer, until resume().
   */
  pause(): void {
    this.runningProcess().signal('SIGSTOP');
  }

  resume(): void {
    this.runningProcess().signal('SIGCONT');
  }

  /** Runs one inline command (e.g. `PUBSUB NUMSUB channel`) and returns the raw reply. */
  command(...args: string[]): Promise<string> {
    return rawCommand(this.port, args);
  }

  private runningProcess(): RedisProcess {
    if (!this.process) throw new Error('redis-server is not running');
    return this.process;
  }
}

/** A server on `port` of loopback, with no persistence and quiet logs. */
export function serverArgs(port: number): string[] {
  return [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--protected-mode',
    'no',
    '--loglevel',
    'warning',
  ];
}

/** One `redis-server` process (a server or a sentinel) on `port`. */
export class RedisProcess {
  private constructor(
    readonly port: number,
    private readonly child: ChildProcess,
  ) {}

  static async start(port: number, args: (port: number) => string[]): Promise<RedisProcess> {
    const child = spawn('redis-server', args(port), { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const redis = new RedisProcess(port, child);
    try {
      await waitFor(`redis-server on port ${port}`, async () => {
        if (child.exitCode !== null) throw new Error(`redis-server exited: ${stderr}`);
        return (await ping(port)) === '+PONG';
      });
    } catch (error) {
      await redis.kill();
      throw error;
    }
    return redis;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Sends `signal`; throws when the process is gone. */
  signal(signal: NodeJS.Signals): void {
    if (!this.running || !this.child.kill(signal)) throw new Error('redis-server is not running');
  }

  /** SIGKILL: every connection drops at once, as in a crash. */
  async kill(): Promise<void> {
    if (!this.running) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    await exited;
  }
}
