import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { describeUrl } from '../common/logger.js';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { redisConfig } from './redis.config.js';

/** What a connection is for: its name in `CLIENT LIST`, and in the logs. */
export type RedisRole = 'publisher' | 'subscriber' | 'leases' | 'rate-limit' | 'detector';

/** A connection for commands: to one server (or Sentinel's master), or to a cluster. */
export type RedisClient = Redis | Cluster;

/**
 * How long Redis may take to answer a command: past it the command fails, and the
 * connection is taken for dead (destroyed, then opened again). A Redis that hangs (stopped,
 * paused, cut off without a reset) then costs a request this long, not forever.
 */
const RESPONSE_TIMEOUT_MS = 5_000;

/**
 * Commands fail at once while the connection is down (no offline queue), so a request gets
 * its 500 in milliseconds instead of waiting for a broker that may not come back. A command
 * that failed is not sent again on reconnect: a PUBLISH whose request was already answered
 * would reach listeners late, out of id order.
 */
const NODE_OPTIONS = {
  maxRetriesPerRequest: 1,
  connectTimeout: 2_000,
  commandTimeout: RESPONSE_TIMEOUT_MS,
  socketTimeout: RESPONSE_TIMEOUT_MS,
  autoResendUnfulfilledCommands: false,
  autoResubscribe: false,
} satisfies RedisOptions;
const COMMON_OPTIONS: RedisOptions = {
  ...NODE_OPTIONS,
  enableOfflineQueue: false,
  retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
};

/**
 * A cluster client follows the cluster by itself: a MOVED or ASK reply, or a node gone, sends
 * a command on to the node that owns its slot now (within `maxRedirections`, before the
 * request is answered), and the slot map is asked again after each.
 */
const CLUSTER_OPTIONS: ClusterOptions = {
  enableOfflineQueue: false,
  clusterRetryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  slotsRefreshTimeout: 2_000,
  slotsRefreshInterval: 5_000,
};

/**
 * Every Redis connection of the instance, created here by role from one configured base
 * (`REDIS_URL`, `REDIS_SENTINELS` with `REDIS_SENTINEL_MASTER`, or `REDIS_CLUSTER_NODES`: a
 * cluster client per role) and closed here at shutdown, after every module that used one has
 * stopped. With none set, `enabled` is false and the modules choose their single-instance
 * implementations.
 */
@Injectable()
export class RedisConnections implements OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  private readonly base?: Redis;
  private readonly cluster?: { nodes: { host: string; port: number }[]; node: RedisOptions };
  private readonly created = new Set<RedisClient>();
  readonly keyPrefix: string;
  /** For the logs: where Redis is, without credentials. */
  readonly description: string;

  constructor(@InjectConfig(redisConfig) redis: ConfigOf<typeof redisConfig>) {
    this.keyPrefix = redis.keyPrefix;
    if (redis.sentinels) {
      // The base is never connected itself: each role gets its own `duplicate()`.
      this.base = new Redis({
        ...COMMON_OPTIONS,
        lazyConnect: true,
        sentinels: redis.sentinels,
        name: redis.sentinelMaster,
        sentinelPassword: redis.sentinelPassword,
        username: redis.username,
        password: redis.password,
        // A failover: the new master is asked of the sentinels on every reconnect.
        failoverDetector: true,
      });
      this.description = `master ${redis.sentinelMaster} via sentinels ${redis.sentinels.map((s) => `${s.host}:${s.port}`).join(',')}`;
    } else if (redis.clusterNodes) {
      this.cluster = {
        nodes: redis.clusterNodes,
        node: {
          ...NODE_OPTIONS,
          username: redis.username,
          password: redis.password,
          tls: redis.clusterTls ? {} : undefined,
        },
      };
      this.description = `cluster via ${redis.clusterNodes.map((n) => `${n.host}:${n.port}`).join(',')}`;
    } else if (redis.url) {
      this.base = new Redis(redis.url, { ...COMMON_OPTIONS, lazyConnect: true });
      this.description = describeUrl(redis.url);
    } else {
      this.description = 'none (in-process bus, single instance)';
    }
  }

  /** True when Redis is configured: several instances share it. */
  get enabled(): boolean {
    return this.base !== undefined || this.isCluster;
  }

  /** True with `REDIS_CLUSTER_NODES`: keys a script touches together need one hash tag. */
  get isCluster(): boolean {
    return this.cluster !== undefined;
  }

  /** A `prefix:name` key or channel of this deployment. */
  key(name: string): string {
    return `${this.keyPrefix}:${name}`;
  }

  /**
   * `{prefix:name}`: a key or channel whose hash tag is all of it, so that on a cluster the
   * keys named `{prefix:name}:…` share its slot.
   */
  slotKey(name: string): string {
    return `{${this.key(name)}}`;
  }

  /**
   * A new connection for `role`, connecting now. Its errors are logged (ioredis reconnects by
   * itself; an unheard 'error' would end the process). Closed by this class at shutdown.
   */
  create(role: RedisRole): RedisClient {
    if (this.cluster) {
      return this.track(
        role,
        new Cluster(this.cluster.nodes, {
          ...CLUSTER_OPTIONS,
          // Certificates name the nodes: connect by the names the cluster gives, unresolved.
          ...(this.cluster.node.tls ? { dnsLookup: (address, done) => done(null, address) } : {}),
          redisOptions: { ...this.cluster.node, connectionName: role },
        }),
      );
    }
    if (!this.base) throw new Error('Redis is not configured (REDIS_URL, REDIS_SENTINELS…)');
    return this.track(role, this.base.duplicate({ connectionName: role, lazyConnect: false }));
  }

  /**
   * A connection to one node of the cluster, as a cluster client's own are: for what a cluster
   * client cannot do, such as a subscription held on the node that owns a shard channel. It
   * does not reconnect: the node may not own the slot any more, so its user opens another.
   * Forgotten here once it has ended.
   */
  createNode(role: RedisRole, node: { host: string; port: number }): Redis {
    if (!this.cluster) throw new Error('Redis Cluster is not configured (REDIS_CLUSTER_NODES)');
    const connection = new Redis({
      ...this.cluster.node,
      ...node,
      connectionName: role,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    connection.once('end', () => this.created.delete(connection));
    return this.track(role, connection);
  }

  /** Its errors are logged (an unheard 'error' would end the process); closed at shutdown. */
  private track<C extends RedisClient>(role: RedisRole, connection: C): C {
    connection.on('error', (error: Error) => this.logger.warn(`${role}: ${error.message}`));
    this.created.add(connection);
    return connection;
  }

  async onApplicationShutdown(): Promise<void> {
    // quit() waits for a reply, which a connection that is down never gives: cut it instead.
    const ready = [...this.created].filter((c) => c.status === 'ready');
    for (const connection of this.created) if (!ready.includes(connection)) connection.disconnect();
    await Promise.allSettled(ready.map((c) => c.quit()));
    this.created.clear();
  }
}
