import type { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/**
 * Who runs the retention job: one instance at a time. With Redis the instances compete for
 * one key per run; without it there is one instance, and it always may.
 */
export abstract class RetentionLease {
  /** Takes the lease for a run: false when another instance holds it. */
  abstract acquire(): Promise<boolean>;
  /** Extends the lease between batches: false when it was lost (the run must stop). */
  abstract renew(): Promise<boolean>;
  abstract release(): Promise<void>;
}

/** One instance (no Redis): nobody to exclude. */
export class LocalRetentionLease extends RetentionLease {
  acquire(): Promise<boolean> {
    return Promise.resolve(true);
  }

  renew(): Promise<boolean> {
    return Promise.resolve(true);
  }

  async release(): Promise<void> {}
}

// Renew and release only our own lease: it may have expired and been taken meanwhile.
const RENEW_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/** How long a new connection may take to be ready before a run gives up (and is retried). */
const READY_TIMEOUT_MS = 5_000;

/**
 * `SET key token NX PX ttl` for a run, extended after each batch, deleted at its end. An
 * instance that dies mid-run leaves the key to expire: the next run after that goes ahead.
 * A batch is one short statement, far within `ttlMs`, so a holder renews long before expiry.
 */
export class RedisRetentionLease extends RetentionLease {
  /** This instance's value of the key: readable in Redis, to tell who runs the job. */
  readonly token = `${hostname()}:${process.pid}:${randomUUID()}`;
  private redis?: Redis;

  constructor(
    /** Opens the lease's own connection, on first use (closed with the others at shutdown). */
    private readonly connect: () => Redis,
    readonly key: string,
    private readonly ttlMs: number,
  ) {
    super();
  }

  async acquire(): Promise<boolean> {
    const redis = await this.connection();
    return (await redis.set(this.key, this.token, 'PX', this.ttlMs, 'NX')) === 'OK';
  }

  async renew(): Promise<boolean> {
    const redis = await this.connection();
    return (await redis.eval(RENEW_SCRIPT, 1, this.key, this.token, this.ttlMs)) === 1;
  }

  async release(): Promise<void> {
    const redis = await this.connection();
    await redis.eval(RELEASE_SCRIPT, 1, this.key, this.token);
  }

  /** Commands fail at once while the connection is not ready (no offline queue): wait for it. */
  private async connection(): Promise<Redis> {
    const redis = (this.redis ??= this.connect());
    if (redis.status === 'ready') return redis;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        redis.off('ready', ready);
        reject(new Error(`Redis not ready within ${READY_TIMEOUT_MS} ms`));
      }, READY_TIMEOUT_MS);
      const ready = () => {
        clearTimeout(timer);
        resolve();
      };
      redis.once('ready', ready);
    });
    return redis;
  }
}
