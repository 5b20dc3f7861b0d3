import { Logger } from '@nestjs/common';
import type { Lease, Leases } from './leases.js';

/**
 * Competes for one lease for as long as it runs: takes it whenever it is free (trying again
 * just after the holder's would expire, and every third of the lease meanwhile), tells the
 * holder, and after a loss competes again. For work that must run on exactly one instance
 * for as long as the service runs (a webhook endpoint's deliveries, a consumer).
 */
export class LeaseCompetition {
  private readonly logger = new Logger('Leases');
  private timer?: NodeJS.Timeout;
  private held?: Lease;
  private stopped = false;
  private attempt: Promise<void> = Promise.resolve();
  /** Resolves on `stop()`: an attempt waiting for the store (Redis down) gives up then. */
  private readonly stopping = Promise.withResolvers<void>();

  constructor(
    private readonly leases: Leases,
    readonly name: string,
    private readonly ttlMs: number,
    /** Told when this instance holds the lease: it runs until `lease.signal` aborts or `stop()`. */
    private readonly holder: { acquired(lease: Lease): void },
  ) {}

  /** Whether this instance holds the lease now. */
  get holding(): boolean {
    return this.held !== undefined && !this.held.signal.aborted;
  }

  start(): void {
    this.schedule(0);
  }

  /** Stops competing, and releases the lease if held. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopping.resolve();
    clearTimeout(this.timer);
    await this.attempt;
    const lease = this.held;
    this.held = undefined;
    await lease?.release();
  }

  private schedule(ms: number): void {
    clearTimeout(this.timer);
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.attempt = this.tryOnce();
    }, ms);
  }

  private async tryOnce(): Promise<void> {
    const retryMs = Math.max(1, Math.floor(this.ttlMs / 3));
    try {
      // Not past a stop: with Redis down at shutdown the store never becomes available.
      await Promise.race([this.leases.whenAvailable(), this.stopping.promise]);
      if (this.stopped) return;
      const attempt = await this.leases.tryAcquire(this.name, this.ttlMs);
      if (!attempt.lease) {
        // Just after the holder's lease would expire, and now and then meanwhile.
        this.schedule(Math.min(attempt.heldForMs + 1, retryMs));
        return;
      }
      const lease = attempt.lease;
      if (this.stopped) {
        await lease.release();
        return;
      }
      this.held = lease;
      lease.signal.addEventListener('abort', () => this.lost(lease), { once: true });
      this.holder.acquired(lease);
    } catch (error) {
      this.logger.warn(`Could not compete for lease ${this.name}: ${(error as Error).message}`);
      this.schedule(Math.min(1_000, retryMs));
    }
  }

  private lost(lease: Lease): void {
    if (this.held !== lease) return;
    this.held = undefined;
    this.schedule(0);
  }
}
