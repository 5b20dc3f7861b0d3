// --redis-cluster: a Redis Cluster of the bench's own, six local `redis-server` processes in
// cluster mode (three masters, a replica each) in a temporary directory, joined by
// `redis-cli --cluster create`. The services then run on REDIS_CLUSTER_NODES instead of
// REDIS_URL; the cluster is stopped with the run (the exit hook kills any child left).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Child, freePort } from './procs.mjs';

const run = promisify(execFile);
const cli = async (port, ...args) =>
  (await run('redis-cli', ['-p', String(port), ...args])).stdout.trim();

async function until(what, check, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

export class LocalRedisCluster {
  constructor(nodes, dir) {
    this.nodes = nodes;
    this.dir = dir;
  }

  /** `host:port,…` of every node, as REDIS_CLUSTER_NODES takes them. */
  get seeds() {
    return this.nodes.map((n) => `127.0.0.1:${n.port}`).join(',');
  }

  static async start({ echo = false } = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'bench-redis-cluster-'));
    const nodes = [];
    const cluster = new LocalRedisCluster(nodes, dir);
    try {
      for (let i = 0; i < 6; i++) {
        const [port, busPort] = [await freePort(), await freePort()];
        const args = [
          ...['--port', String(port), '--bind', '127.0.0.1', '--protected-mode', 'no'],
          ...['--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning'],
          ...['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`],
          ...['--cluster-port', String(busPort), '--cluster-node-timeout', '5000'],
        ];
        const child = new Child(`redis-node:${port}`, 'redis-server', args, { cwd: dir, echo });
        nodes.push({ port, child });
        await until(`redis-server on ${port}`, async () => (await cli(port, 'ping')) === 'PONG');
      }
      await run('redis-cli', [
        '--cluster',
        'create',
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ]);
      await until('cluster_state:ok on every node', async () => {
        for (const { port } of nodes) {
          const info = await cli(port, 'cluster', 'info');
          if (!info.includes('cluster_state:ok') || !info.includes('cluster_known_nodes:6')) {
            return false;
          }
        }
        return true;
      });
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  /** `redis-server` version of the nodes, for the report. */
  async version() {
    return (await cli(this.nodes[0].port, 'info', 'server')).match(/redis_version:(\S+)/)?.[1];
  }

  async stop() {
    await Promise.all(this.nodes.map((n) => n.child.stop(2_000, 'SIGKILL').catch(() => {})));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
