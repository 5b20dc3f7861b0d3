import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { Redis, type RedisOptions } from 'ioredis';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { redisConfig } from './redis.config.js';

/** What a connection is for: its name in `CLIENT LIST`, and in the logs. */
export type RedisRole = 'publisher' | 'subscriber' | 'leases' | 'rate-limit' | 'detector';

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
const COMMON_OPTIONS: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 1,
  connectTimeout: 2_000,
  commandTimeout: RESPONSE_TIMEOUT_MS,
  socketTimeout: RESPONSE_TIMEOUT_MS,
  autoResendUnfulfilledCommands: false,
  autoResubscribe: false,
  retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
};

/**
 * Every Redis connection of the instance, created here by role from one configured base
 * (`REDIS_URL`, or `REDIS_SENTINELS` with `REDIS_SENTINEL_MASTER`) and closed here at
 * shutdown, after every module that used one has stopped. With neither set, `enabled` is
 * false and the modules choose their single-instance implementations.
 */
@Injectable()
export class RedisConnections implements OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  private readonly base?: Redis;
  private readonly created: Redis[] = [];
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
    } else if (redis.url) {
      this.base = new Redis(redis.url, { ...COMMON_OPTIONS, lazyConnect: true });
      this.description = describeUrl(redis.url);
    } else {
      this.description = 'none (in-process bus, single instance)';
    }
  }

  /** True when Redis is configured: several instances share it. */
  get enabled(): boolean {
    return this.base !== undefined;
  }

  /** A `prefix:name` key or channel of this deployment. */
  key(name: string): string {
    return `${this.keyPrefix}:${name}`;
  }

  /**
   * A new connection for `role`, connecting now. Its errors are logged (ioredis reconnects by
   * itself; an unheard 'error' would end the process). Closed by this class at shutdown.
   */
  create(role: RedisRole): Redis {
    if (!this.base) throw new Error('Redis is not configured (REDIS_URL or REDIS_SENTINELS)');
    const connection = this.base.duplicate({ connectionName: role, lazyConnect: false });
    connection.on('error', (error: Error) => this.logger.warn(`${role}: ${error.message}`));
    this.created.push(connection);
    return connection;
  }

  async onApplicationShutdown(): Promise<void> {
    // quit() waits for a reply, which a connection that is down never gives: cut it instead.
    const ready = this.created.filter((c) => c.status === 'ready');
    for (const connection of this.created) if (!ready.includes(connection)) connection.disconnect();
    await Promise.allSettled(ready.map((c) => c.quit()));
    this.created.length = 0;
  }
}

/** The URL without its password, for the log. */
function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`;
  } catch {
    return '(unparsable URL)';
  }
}
