import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, waitFor } from './ports.js';
import { rawCommand } from './redis-protocol.js';
import { RedisProcess, serverArgs } from './redis-server.js';

const run = promisify(execFile);

/** One line of `CLUSTER NODES`. */
export interface ClusterNode {
  id: string;
  port: number;
  master: boolean;
  failed: boolean;
  /** The id of its master, for a replica. */
  masterId?: string;
  /** The slots it serves, as [first, last] ranges. */
  slots: [number, number][];
}

/**
 * A Redis Cluster of the test's own: six `redis-server --cluster-enabled yes` processes (three
 * masters, a replica each) on free loopback ports, with no persistence, joined by
 * `redis-cli --cluster create`. Each node's cluster bus port is a free port too (not port +
 * 10000, which may be taken). A master is deemed failing after 1 s (`cluster-node-timeout`,
 * or `nodeTimeoutMs`), and its replica promoted a moment later.
 */
export class RedisCluster {
  private constructor(
    readonly nodes: RedisProcess[],
    private readonly dir: string,
  ) {}

  /** `host:port,…` of every node, as REDIS_CLUSTER_NODES takes them. */
  get seeds(): string {
    return this.nodes.map((n) => `127.0.0.1:${n.port}`).join(',');
  }

  /**
   * `nodeTimeoutMs`: how long a master may be silent before it is deemed failing; `args`:
   * more of every node's configuration (ACL users, say).
   */
  static async start({ nodeTimeoutMs = 1_000, args = [] as string[] } = {}): Promise<RedisCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'redis-cluster-'));
    const nodes: RedisProcess[] = [];
    try {
      for (let i = 0; i < 6; i++) {
        const busPort = await freePort();
        const node = await RedisProcess.start(await freePort(), (port) => [
          ...serverArgs(port),
          '--dir',
          dir,
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          `nodes-${port}.conf`,
          '--cluster-port',
          String(busPort),
          '--cluster-node-timeout',
          String(nodeTimeoutMs),
          // A replica just synced may be promoted: the test kills a master soon after start.
          '--cluster-replica-validity-factor',
          '0',
          ...args,
        ]);
        nodes.push(node);
      }
      await run('redis-cli', [
        '--cluster',
        'create',
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ]);
      const cluster = new RedisCluster(nodes, dir);
      await cluster.untilHealthy();
      return cluster;
    } catch (error) {
      await Promise.all(nodes.map((node) => node.kill()));
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /**
   * Every running node says `cluster_state:ok` and knows the others, all slots served, and
   * every running replica is in sync with its master.
   */
  untilHealthy(timeoutMs = 30_000): Promise<true> {
    return waitFor(
      'every node of the cluster to say cluster_state:ok',
      async () => {
        for (const node of this.running()) {
          const info = await rawCommand(node.port, ['CLUSTER', 'INFO']);
          if (!info.includes('cluster_state:ok') || !info.includes('cluster_slots_ok:16384')) {
            return false;
          }
          if (!info.includes('cluster_known_nodes:6')) return false;
          // A replica that has not synced yet cannot take over.
          const replication = await rawCommand(node.port, ['INFO', 'replication']);
          if (
            replication.includes('role:slave') &&
            !replication.includes('master_link_status:up')
          ) {
            return false;
          }
        }
        return true;
      },
      { timeoutMs, intervalMs: 100 },
    );
  }

  /** The nodes as `port` (by default a running node) sees them now. */
  async topology(port = this.running()[0].port): Promise<ClusterNode[]> {
    const reply = await rawCommand(port, ['CLUSTER', 'NODES']);
    return reply
      .split('\r\n')
      .slice(1)
      .join('\n')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => {
        const [id, address, flags, masterId, , , , , ...slots] = line.split(' ');
        return {
          id,
          port: Number(address.split('@')[0].split(':')[1]),
          master: flags.includes('master'),
          failed: flags.split(',').includes('fail'),
          masterId: masterId === '-' ? undefined : masterId,
          slots: slots
            .filter((s) => !s.startsWith('['))
            .map((s) => s.split('-').map(Number))
            .map(([first, last]) => [first, last ?? first] as [number, number]),
        };
      });
  }

  /** The slot of `key` (or shard channel). */
  async slotOf(key: string): Promise<number> {
    const reply = await rawCommand(this.running()[0].port, ['CLUSTER', 'KEYSLOT', key]);
    return Number(reply.slice(1));
  }

  /** The master serving `slot` now, as `port` (by default a running node) sees it. */
  async masterOf(slot: number, port?: number): Promise<ClusterNode> {
    const nodes = await this.topology(port);
    const master = nodes.find(
      (n) => n.master && !n.failed && n.slots.some(([a, b]) => slot >= a && slot <= b),
    );
    if (!master) throw new Error(`No master serves slot ${slot}`);
    return master;
  }

  /** The process on `port`. */
  node(port: number): RedisProcess {
    const node = this.nodes.find((n) => n.port === port);
    if (!node) throw new Error(`No node on port ${port}`);
    return node;
  }

  /** How many connections of all the nodes are subscribed to the shard channel. */
  async shardSubscribers(channel: string): Promise<number> {
    const master = await this.masterOf(await this.slotOf(channel));
    const reply = await rawCommand(master.port, ['PUBSUB', 'SHARDNUMSUB', channel]);
    return Number(reply.split('\r\n').at(-1)!.slice(1));
  }

  /**
   * Moves `slot` to the master on `toPort`, the way `redis-cli --cluster reshard` does:
   * IMPORTING on the target, MIGRATING on the source, its keys MIGRATEd in batches, then the
   * new owner announced to every master.
   */
  async migrateSlot(slot: number, toPort: number): Promise<void> {
    const nodes = await this.topology();
    const source = await this.masterOf(slot);
    const target = nodes.find((n) => n.port === toPort)!;
    const s = String(slot);
    await rawCommand(toPort, ['CLUSTER', 'SETSLOT', s, 'IMPORTING', source.id]);
    await rawCommand(source.port, ['CLUSTER', 'SETSLOT', s, 'MIGRATING', target.id]);
    for (;;) {
      const { stdout } = await run('redis-cli', [
        '-p',
        String(source.port),
        'CLUSTER',
        'GETKEYSINSLOT',
        s,
        '100',
      ]);
      const keys = stdout.split('\n').filter((k) => k !== '');
      if (keys.length === 0) break;
      await run('redis-cli', [
        '-p',
        String(source.port),
        'MIGRATE',
        '127.0.0.1',
        String(toPort),
        '',
        '0',
        '5000',
        'KEYS',
        ...keys,
      ]);
    }
    // The two parties first, as redis-cli does; then every other master.
    const others = nodes.filter((n) => n.master && !n.failed && n !== target && n.id !== source.id);
    for (const node of [target, source, ...others]) {
      await rawCommand(node.port, ['CLUSTER', 'SETSLOT', s, 'NODE', target.id]);
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.kill()));
    rmSync(this.dir, { recursive: true, force: true });
  }

  private running(): RedisProcess[] {
    return this.nodes.filter((n) => n.running);
  }
}
