import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
    const child = spawn('redis-server', serverArgs(this.port), {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
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

/**
 * Enough of RESP for the replies the tests read: simple strings, integers, bulk strings
 * (`CLIENT LIST`), flat arrays.
 */
function isComplete(reply: string): boolean {
  if (!reply.endsWith('\r\n')) return false;
  if (reply[0] === '$') {
    const header = reply.indexOf('\r\n');
    const length = Number(reply.slice(1, header));
    return length < 0 || Buffer.byteLength(reply) >= header + 2 + length + 2;
  }
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

/**
 * A highly available Redis of the test's own: a master, a replica of it, and three
 * sentinels (`redis-server --sentinel`) watching it as `masterName`, each on a free
 * loopback port, with no persistence. A failover takes a few seconds: a sentinel sees the
 * master down after 1 s, and two of them must agree.
 */
export class RedisSentinelGroup {
  private constructor(
    readonly masterName: string,
    readonly master: RedisProcess,
    readonly replica: RedisProcess,
    readonly sentinels: RedisProcess[],
    private readonly dir: string,
  ) {}

  /** `host:port,host:port,host:port`, as REDIS_SENTINELS takes them. */
  get sentinelAddresses(): string {
    return this.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',');
  }

  static async start(masterName = 'mymaster'): Promise<RedisSentinelGroup> {
    const dir = mkdtempSync(join(tmpdir(), 'redis-sentinels-'));
    const started: RedisProcess[] = [];
    try {
      // Files (the replica's copy of the master's data) in the group's directory.
      const master = await RedisProcess.start(await freePort(), (port) => [
        ...serverArgs(port),
        '--dir',
        dir,
      ]);
      started.push(master);
      const replica = await RedisProcess.start(await freePort(), (port) => [
        ...serverArgs(port),
        '--dir',
        dir,
        '--replicaof',
        '127.0.0.1',
        String(master.port),
      ]);
      started.push(replica);
      const sentinels: RedisProcess[] = [];
      for (let i = 0; i < 3; i++) {
        const sentinel = await RedisProcess.start(await freePort(), (port) => {
          // A sentinel rewrites its configuration file: one each, writable.
          const file = join(dir, `sentinel-${port}.conf`);
          writeFileSync(
            file,
            [
              `port ${port}`,
              'bind 127.0.0.1',
              `dir ${dir}`,
              `sentinel monitor ${masterName} 127.0.0.1 ${master.port} 2`,
              `sentinel down-after-milliseconds ${masterName} 1000`,
              `sentinel failover-timeout ${masterName} 5000`,
              `sentinel parallel-syncs ${masterName} 1`,
              '',
            ].join('\n'),
          );
          return [file, '--sentinel', '--loglevel', 'warning'];
        });
        started.push(sentinel);
        sentinels.push(sentinel);
      }
      const group = new RedisSentinelGroup(masterName, master, replica, sentinels, dir);
      // A failover needs every sentinel to know the replica and the two other sentinels
      // (they find each other through the master, every 2 s).
      await waitFor(
        'the sentinels to know the replica and each other',
        async () => {
          for (const sentinel of sentinels) {
            const fields = await group.sentinelMaster(sentinel);
            if (fields['num-slaves'] !== '1' || fields['num-other-sentinels'] !== '2') return false;
          }
          return true;
        },
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      return group;
    } catch (error) {
      await Promise.all(started.map((process) => process.kill()));
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** The master's port as the sentinels answer it now. */
  async masterPort(): Promise<number> {
    const reply = await rawCommand(this.sentinels[0].port, [
      'SENTINEL',
      'get-master-addr-by-name',
      this.masterName,
    ]);
    return Number(reply.split('\r\n')[4]);
  }

  async stop(): Promise<void> {
    await Promise.all([this.master, this.replica, ...this.sentinels].map((p) => p.kill()));
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async sentinelMaster(sentinel: RedisProcess): Promise<Record<string, string>> {
    const reply = await rawCommand(sentinel.port, ['SENTINEL', 'master', this.masterName]);
    const values = reply
      .split('\r\n')
      .slice(1)
      .filter((line) => !line.startsWith('$'));
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < values.length; i += 2) fields[values[i]] = values[i + 1];
    return fields;
  }
}

function serverArgs(port: number): string[] {
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

  /** SIGKILL: every connection drops at once, as in a crash. */
  async kill(): Promise<void> {
    if (!this.running) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGKILL');
    await exited;
  }
}
