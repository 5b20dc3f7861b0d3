import { Logger } from '@nestjs/common';
import type { RedisClient } from './redis-connections.js';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { withTimeout } from '../common/with-timeout.js';
import { Leases, type LeaseAttempt } from './leases.js';

// SET NX PX, or how long the holder's lease has left.
const ACQUIRE = `if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return -1 end
return redis.call('pttl', KEYS[1])`;
// Each key still ours gets its own ttl again; 1 renewed, 0 lost.
const RENEW = `local renewed = {}
for i, key in ipairs(KEYS) do
  if redis.call('get', key) == ARGV[1] then
    renewed[i] = redis.call('pexpire', key, ARGV[i + 1])
  else
    renewed[i] = 0
  end
end
return renewed`;
// Delete only our own: it may have expired and been taken meanwhile.
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;

/** How long an attempt waits for the connection to be ready before it is sent anyway (and fails). */
const READY_TIMEOUT_MS = 5_000;

interface Held {
  key: string;
  ttlMs: number;
  controller: AbortController;
  deadline?: NodeJS.Timeout;
}

/**
 * Leases in Redis: `SET key token NX PX ttl`, renewed together every third of the shortest
 * lease held (one script over all the keys), released with a compare-and-delete. A holder
 * that cannot renew is told to stop (its signal aborts) a margin before its key can expire,
 * so two holders never overlap. Every key carries the hash tag `{<prefix>:lease}`: on a Redis
 * Cluster they share one slot, which the renewal script needs.
 */
export class RedisLeases extends Leases {
  readonly description: string;
  /** This instance's value of its keys: readable in Redis, to tell who holds a lease. */
  readonly token = `${hostname()}:${process.pid}:${randomUUID()}`;
  private readonly logger = new Logger('Leases');
  private readonly held = new Map<string, Held>();
  private timer?: NodeJS.Timeout;
  /** When the next renewal is due (ms since the epoch), while one is scheduled. */
  private renewalDueAt = Infinity;
  /** Shared by every caller waiting for the connection. */
  private ready?: Promise<void>;
  private connection?: RedisClient;

  constructor(
    /** Opens the leases' connection, on first use (closed with the others at shutdown). */
    private readonly connect: () => RedisClient,
    private readonly keyPrefix: string,
  ) {
    super();
    this.description = `leases in Redis under ${this.keyOf('*')}`;
  }

  private get redis(): RedisClient {
    return (this.connection ??= this.connect());
  }

  /** The key of the lease `name`. */
  keyOf(name: string): string {
    return `{${this.keyPrefix}:lease}:${name}`;
  }

  async tryAcquire(name: string, ttlMs: number): Promise<LeaseAttempt> {
    // Commands fail at once while the connection is not ready (no offline queue): the first
    // use opens it, and a short wait for it is better than a failed attempt.
    await withTimeout(this.whenAvailable(), READY_TIMEOUT_MS).catch(() => undefined);
    const key = this.keyOf(name);
    const startedAt = Date.now();
    const left = (await this.redis.eval(ACQUIRE, 1, key, this.token, ttlMs)) as number;
    if (left !== -1) return { heldForMs: Math.max(0, left) };
    const held: Held = { key, ttlMs, controller: new AbortController() };
    this.held.set(key, held);
    this.armDeadline(held, startedAt);
    this.scheduleRenewals();
    return {
      lease: { name, signal: held.controller.signal, release: () => this.release(held) },
    };
  }

  whenAvailable(): Promise<void> {
    if (this.redis.status === 'ready') return Promise.resolve();
    this.ready ??= new Promise<void>((resolve) => this.redis.once('ready', resolve)).finally(
      () => (this.ready = undefined),
    );
    return this.ready;
  }

  private async release(held: Held): Promise<void> {
    if (this.held.get(held.key) !== held) return;
    this.forget(held);
    try {
      await this.redis.eval(RELEASE, 1, held.key, this.token);
    } catch (error) {
      // It expires by itself within its ttl.
      this.logger.warn(`Could not release ${held.key}: ${(error as Error).message}`);
    }
  }

  /**
   * Every third of the shortest lease held. A lease taken meanwhile moves the next renewal
   * earlier, never later: leases taken one after the other must not keep putting it off.
   */
  private scheduleRenewals(): void {
    if (this.held.size === 0) return;
    const every = Math.floor(Math.min(...[...this.held.values()].map((h) => h.ttlMs)) / 3);
    const dueAt = Date.now() + every;
    if (dueAt >= this.renewalDueAt) return;
    clearTimeout(this.timer);
    this.renewalDueAt = dueAt;
    this.timer = setTimeout(() => {
      this.renewalDueAt = Infinity;
      void this.renewAll().finally(() => this.scheduleRenewals());
    }, every);
  }

  private async renewAll(): Promise<void> {
    const batch = [...this.held.values()];
    if (batch.length === 0) return;
    const startedAt = Date.now();
    let renewed: number[];
    try {
      renewed = (await this.redis.eval(
        RENEW,
        batch.length,
        ...batch.map((h) => h.key),
        this.token,
        ...batch.map((h) => h.ttlMs),
      )) as number[];
    } catch (error) {
      // The deadlines stand: a lease not renewed in time is given up before it can expire.
      this.logger.warn(`Could not renew ${batch.length} lease(s): ${(error as Error).message}`);
      return;
    }
    batch.forEach((held, i) => {
      if (this.held.get(held.key) !== held) return;
      if (renewed[i] === 1) this.armDeadline(held, startedAt);
      else this.lose(held, 'another instance holds it now');
    });
  }

  /** Counted from before the command was sent, so it is never later than Redis's expiry. */
  private armDeadline(held: Held, startedAt: number): void {
    clearTimeout(held.deadline);
    const margin = Math.min(1_000, Math.floor(held.ttlMs / 5));
    const remaining = startedAt + held.ttlMs - margin - Date.now();
    held.deadline = setTimeout(() => this.lose(held, 'it could not be renewed in time'), remaining);
  }

  private lose(held: Held, reason: string): void {
    if (this.held.get(held.key) !== held) return;
    this.forget(held);
    this.logger.warn(`Lost the lease ${held.key}: ${reason}`);
    held.controller.abort(new Error(`Lease lost: ${reason}`));
  }

  private forget(held: Held): void {
    clearTimeout(held.deadline);
    this.held.delete(held.key);
    if (this.held.size > 0) return;
    clearTimeout(this.timer);
    this.renewalDueAt = Infinity;
  }
}
