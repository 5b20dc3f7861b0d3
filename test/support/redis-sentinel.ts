import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, waitFor } from './ports.js';
import { rawCommand } from './redis-protocol.js';
import { RedisProcess, serverArgs } from './redis-server.js';

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
