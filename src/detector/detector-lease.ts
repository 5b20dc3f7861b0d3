import { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

/** What the lease tells its holder. */
export interface LeaseHolder {
  /** This instance now holds the lease: start the gateway client. */
  acquired(): void;
  /** The lease is gone (taken over, or not renewed in time): stop the gateway client now. */
  lost(): void;
}

/**
 * Who may run the gateway client: exactly one instance at a time. With Redis every instance
 * competes for one key; with the embedded default there is one instance and it always holds.
 */
export abstract class DetectorLease {
  /** For the logs. */
  abstract readonly description: string;
  /** Starts competing; `holder.acquired()` is called whenever this instance wins. */
  abstract start(holder: LeaseHolder): void;
  /** Gives the lease up and stays out of the competition for `ms`. */
  abstract yield(ms: number): Promise<void>;
  /** Stops competing and releases the lease if held. */
  abstract stop(): Promise<void>;
}

/** One instance (no REDIS_URL): held from the start, no key, no timers but `yield`'s. */
export class LocalDetectorLease extends DetectorLease {
  readonly description = 'single instance, no lease';
  private holder?: LeaseHolder;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  start(holder: LeaseHolder): void {
    this.holder = holder;
    holder.acquired();
  }

  yield(ms: number): Promise<void> {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (!this.stopped) this.holder?.acquired();
    }, ms);
    return Promise.resolve();
  }

  stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    return Promise.resolve();
  }
}

// Renew and release only our own lease: the key may have expired and been taken meanwhile.
const RENEW_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/**
 * A lease in Redis: `SET key token NX PX leaseMs`, renewed every third of the lease with a
 * compare-and-expire script, released on shutdown with a compare-and-delete script. An
 * instance that cannot renew steps down before the key can expire, so two clients never run
 * at once; the others try again when the key's TTL runs out, so one takes over within the
 * lease time of the holder's death.
 */
export class RedisDetectorLease extends DetectorLease {
  readonly description: string;
  /** This instance's value of the key: readable in Redis, to tell who holds the lease. */
  readonly token = `${hostname()}:${process.pid}:${randomUUID()}`;
  private readonly logger = new Logger('DiscordDetector');
  private readonly renewEveryMs: number;
  private readonly stepDownMarginMs: number;
  private redis?: Redis;
  private holder?: LeaseHolder;
  private held = false;
  private stopped = false;
  private timer?: NodeJS.Timeout;
  private deadline?: NodeJS.Timeout;
  private inFlight: Promise<void> = Promise.resolve();
  /** No attempt before this time (ms since the epoch): set by `yield`. */
  private resumeAt = 0;

  constructor(
    /** Opens the lease's own connection (closed with the others at shutdown). */
    private readonly connect: () => Redis,
    readonly key: string,
    private readonly leaseMs: number,
  ) {
    super();
    this.description = `lease ${key} in Redis, ${leaseMs} ms`;
    this.renewEveryMs = Math.floor(leaseMs / 3);
    this.stepDownMarginMs = Math.min(1_000, Math.floor(leaseMs / 5));
  }

  start(holder: LeaseHolder): void {
    this.holder = holder;
    const redis = this.connect();
    // Commands fail at once while disconnected (no offline queue): try as soon as it is back.
    redis.on('ready', () => {
      if (!this.held) this.schedule(Math.max(0, this.resumeAt - Date.now()));
    });
    this.redis = redis;
  }

  async yield(ms: number): Promise<void> {
    clearTimeout(this.timer);
    await this.inFlight;
    await this.release();
    this.resumeAt = Date.now() + ms;
    this.schedule(ms);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inFlight;
    await this.release();
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.inFlight = this.held ? this.renew() : this.acquire();
    }, ms);
  }

  private async acquire(): Promise<void> {
    const redis = this.redis!;
    if (redis.status !== 'ready') return; // the 'ready' listener tries again
    const startedAt = Date.now();
    try {
      const won = await redis.set(this.key, this.token, 'PX', this.leaseMs, 'NX');
      if (won === 'OK') {
        this.held = true;
        this.armDeadline(startedAt);
        if (this.stopped) return; // stop() releases it
        this.schedule(this.renewEveryMs);
        this.logger.log(`Holding the gateway lease (${this.description})`);
        this.holder?.acquired();
        return;
      }
      // Someone holds it: try again just after it would expire, checking now and then.
      const ttl = await redis.pttl(this.key);
      this.schedule(
        ttl >= 0 ? Math.min(ttl + 1, this.renewEveryMs) : ttl === -2 ? 1 : this.renewEveryMs,
      );
    } catch (error) {
      this.logger.warn(`Could not compete for the gateway lease: ${(error as Error).message}`);
      this.schedule(Math.min(1_000, this.renewEveryMs));
    }
  }

  private async renew(): Promise<void> {
    const startedAt = Date.now();
    try {
      const renewed = await this.redis!.eval(RENEW_SCRIPT, 1, this.key, this.token, this.leaseMs);
      if (!this.held) return;
      if (renewed === 1) {
        this.armDeadline(startedAt);
        this.schedule(this.renewEveryMs);
      } else {
        this.lose('another instance holds it now');
      }
    } catch (error) {
      this.logger.warn(`Could not renew the gateway lease: ${(error as Error).message}`);
      if (this.held) this.schedule(Math.min(1_000, this.renewEveryMs));
    }
  }

  /** Counted from before the command was sent, so it is never later than Redis's expiry. */
  private armDeadline(startedAt: number): void {
    clearTimeout(this.deadline);
    const remaining = startedAt + this.leaseMs - this.stepDownMarginMs - Date.now();
    this.deadline = setTimeout(() => this.lose('it could not be renewed in time'), remaining);
  }

  private lose(reason: string): void {
    if (!this.held) return;
    this.held = false;
    clearTimeout(this.deadline);
    this.logger.warn(`Lost the gateway lease: ${reason}`);
    this.holder?.lost();
    this.schedule(0);
  }

  private async release(): Promise<void> {
    clearTimeout(this.deadline);
    if (!this.held) return;
    this.held = false;
    try {
      await this.redis!.eval(RELEASE_SCRIPT, 1, this.key, this.token);
    } catch (error) {
      // It expires by itself within the lease time.
      this.logger.warn(`Could not release the gateway lease: ${(error as Error).message}`);
    }
  }
}
