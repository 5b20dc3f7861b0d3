import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { freePort, waitFor } from './ports.js';

/**
 * A throwaway `redis-server` of the test's own, on a free loopback port, with no persistence:
 * the fault tests kill it and start it again on the same port without touching the shared one.
 */
export class ThrowawayRedis {
  private child?: ChildProcess;

  private constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  static async start(): Promise<ThrowawayRedis> {
    const redis = new ThrowawayRedis(await freePort());
    await redis.restart();
    return redis;
  }

  /** Starts the server (again) on the same port; resolves once it answers PING. */
  async restart(): Promise<void> {
    if (this.child) throw new Error('redis-server is already running');
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
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
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    this.child = child;
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('exit', () => {
      if (this.child === child) this.child = undefined;
    });
    try {
      await waitFor(`redis-server on port ${this.port}`, async () => {
        if (child.exitCode !== null) throw new Error(`redis-server exited: ${stderr}`);
        return (await ping(this.port)) === '+PONG';
      });
    } catch (error) {
      await this.kill();
      throw error;
    }
  }

  /** Kills the server abruptly (SIGKILL): every connection drops at once, as in a crash. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    else this.child = undefined;
    await exited;
    this.child = undefined;
  }

  /**
   * Stops the server without closing anything (SIGSTOP, as `docker pause` does): connections
   * stay open and commands get no answer, until resume().
   */
  pause(): void {
    if (!this.child?.kill('SIGSTOP')) throw new Error('redis-server is not running');
  }

  resume(): void {
    if (!this.child?.kill('SIGCONT')) throw new Error('redis-server is not running');
  }

  /** Runs one inline command (e.g. `PUBSUB NUMSUB channel`) and returns the raw reply. */
  command(...args: string[]): Promise<string> {
    return rawCommand(this.port, args);
  }
}

function ping(port: number): Promise<string> {
  return rawCommand(port, ['PING']);
}

/** One RESP command over a fresh connection; the reply is returned as received. */
export function rawCommand(port: number, args: string[], host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host });
    let reply = '';
    const timer = setTimeout(() => socket.destroy(new Error('no reply within 2 s')), 2_000);
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      const parts = args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('');
      socket.write(`*${args.length}\r\n${parts}`);
    });
    socket.on('data', (chunk: string) => {
      reply += chunk;
      if (isComplete(reply)) {
        clearTimeout(timer);
        socket.end();
        resolve(reply.trimEnd());
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** Enough of RESP for the replies the tests read: simple strings, integers, flat arrays. */
function isComplete(reply: string): boolean {
  if (!reply.endsWith('\r\n')) return false;
  if (reply[0] !== '*') return true;
  const lines = reply.split('\r\n').slice(0, -1);
  const count = Number(lines[0].slice(1));
  let index = 1;
  for (let element = 0; element < count; element++) {
    if (index >= lines.length) return false;
    index += lines[index].startsWith('$') ? 2 : 1;
  }
  return index <= lines.length;
}
