import {
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { NameEventsService } from '../name-events/index.js';
import { retentionConfig } from './privacy.config.js';
import { PrivacyMetrics } from './privacy.metrics.js';
import { Leases, type Lease } from '../redis/index.js';

const DAY_MS = 86_400_000;

/** A run renews its lease in the background; an instance that died frees it within this. */
const RETENTION_LEASE_MS = 60_000;

/**
 * RETENTION_DAYS: every RETENTION_INTERVAL_MS (and once at start-up), the entries whose
 * `changedAt` is older are deleted, on one instance at a time (the lease `retention`). Each batch
 * is one short statement under the publish lock, so publishes wait at most one batch and go
 * ahead between batches. Each run is logged with its counts, and counted in the metrics.
 */
@Injectable()
export class RetentionJob implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Retention');
  private timer?: NodeJS.Timeout;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    @InjectConfig(retentionConfig) private readonly config: ConfigOf<typeof retentionConfig>,
    private readonly nameEvents: NameEventsService,
    private readonly leases: Leases,
    private readonly metrics: PrivacyMetrics,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.days === 0) {
      this.logger.log('Retention: off (RETENTION_DAYS is 0: entries are kept forever)');
      return;
    }
    this.logger.log(
      `Retention: entries older than ${this.config.days} day(s) are deleted every ${this.config.intervalMs} ms`,
    );
    this.schedule(0);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.run().finally(() => this.schedule(this.config.intervalMs));
    }, ms).unref();
  }

  /** One run: never throws (a failure is logged, and the next run tries again). */
  private async run(): Promise<void> {
    const cutoff = new Date(Date.now() - this.config.days * DAY_MS);
    let lease: Lease;
    try {
      const attempt = await this.leases.tryAcquire('retention', RETENTION_LEASE_MS);
      if (!attempt.lease) {
        this.metrics.retentionRuns.inc({ outcome: 'skipped' });
        this.logger.debug('Retention run skipped: another instance is running it');
        return;
      }
      lease = attempt.lease;
    } catch (error) {
      this.metrics.retentionRuns.inc({ outcome: 'failed' });
      this.logger.warn(`Retention run not started: ${(error as Error).message}`);
      return;
    }
    let deleted = 0;
    let batches = 0;
    try {
      for (;;) {
        const count = await this.nameEvents.eraseChangedBefore(cutoff, this.config.batchSize);
        deleted += count;
        batches += 1;
        this.metrics.retentionDeleted.inc(count);
        if (count < this.config.batchSize || this.stopped) break;
        if (lease.signal.aborted) throw new Error('the lease was lost');
      }
      this.metrics.retentionRuns.inc({ outcome: 'completed' });
      this.logger.log(
        `Retention run: ${deleted} entries changed before ${cutoff.toISOString()} deleted in ${batches} batch(es)`,
      );
    } catch (error) {
      this.metrics.retentionRuns.inc({ outcome: 'failed' });
      this.logger.warn(
        `Retention run stopped after ${deleted} entries deleted in ${batches} batch(es): ${(error as Error).message}`,
      );
    } finally {
      await lease.release();
    }
  }
}
