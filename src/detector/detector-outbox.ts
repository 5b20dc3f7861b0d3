import { Inject, Injectable, Logger } from '@nestjs/common';
import { BusUnavailableError } from '../bus/name-event-bus.js';
import { DrainLoop } from '../common/drain-loop.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { KnownNamesRepository } from '../name-events/known-names.repository.js';
import { NameEventsService } from '../name-events/name-events.service.js';
import { USER_PARTITIONS, type PublishOutcome } from '../name-events/name-event.types.js';
import { DETECTOR_SETTINGS, type DetectorSettings } from './detector.settings.js';
import { InterruptibleDelay } from './interruptible-delay.js';
import type { MemberObservation } from './member-observation.js';
import { compareWithKnown, observedMembers, type Comparison } from './name-change-rules.js';
import {
  Pending,
  ObservationQueues,
  type ObservationBatch,
  type QueuedObservation,
} from './observation-queues.js';
import type { ReconciliationRun } from './reconciliation-run.js';

/** One batch at a time holds the locks of every user partition. */
const EVERY_PARTITION = [...Array(USER_PARTITIONS).keys()];

/** How long shutdown waits for a batch already under way. */
const STOP_GRACE_MS = 5_000;

/**
 * Gateway observations on their way to the known names and the publish path: each batch is
 * compared with the last known names, and the changes found are stored with the names they
 * move forward, then broadcast (NameEventsService.publishDetected), one batch at a time, live
 * updates first (ObservationQueues).
 *
 * A failure is logged and the same batch retried with back-off for as long as the process
 * runs: a storage or broker outage costs latency, not events, and never reaches the gateway
 * client. A change nobody is listening to is stored, and that is success here (the POST's
 * "no listener" 500 does not apply). Whatever is left at shutdown, or dropped past the
 * bounds, was not compared: the known names still hold the old values, so the next full view
 * of those servers finds the changes.
 */
@Injectable()
export class DetectorOutbox {
  private readonly logger = new Logger('DiscordDetector');
  private readonly queues: ObservationQueues;
  private readonly loop = new DrainLoop<ObservationBatch>(
    () => this.queues.take(this.settings.batchSize),
    (next) => this.compareAndPublish(next),
    (error) =>
      this.logger.error(
        `Name change detection stopped: ${(error as Error).stack ?? String(error)}`,
      ),
  );
  /** The batch under way, by the queue it came from. */
  private inFlight = { live: 0, reconcile: 0 };
  private stopped = false;
  private readonly delay = new InterruptibleDelay();

  constructor(
    private readonly nameEvents: NameEventsService,
    private readonly knownNames: KnownNamesRepository,
    @Inject(DETECTOR_SETTINGS) private readonly settings: DetectorSettings,
    private readonly metrics: MetricsService,
  ) {
    this.queues = new ObservationQueues(settings, this.logger);
    // Waiting or under way: 0 on both means every observation received has been compared.
    metrics.onCollect(() => {
      const { live, reconciling } = this.queues.counts;
      metrics.detectorBacklog.set({ queue: 'live' }, live + this.inFlight.live);
      metrics.detectorBacklog.set({ queue: 'reconcile' }, reconciling + this.inFlight.reconcile);
    });
  }

  /** Observations waiting (the batch under way excluded). */
  get backlog(): { live: number; reconciling: number } {
    return this.queues.counts;
  }

  /**
   * Members seen in live updates: compared first, in the order they arrived. `done` is
   * called once they are all compared and their changes stored (or dropped past the bounds,
   * for the next full view to find), never when shutdown comes first.
   */
  observeLive(observations: readonly MemberObservation[], done: () => void = noop): void {
    if (this.refuse(observations.length)) return;
    this.queues.pushLive(observations, new Pending(observations.length, done));
    this.loop.kick();
  }

  /** The members of a full view of a server: compared in batches, after live updates. */
  observeFullView(
    observations: readonly MemberObservation[],
    run: ReconciliationRun,
    done: () => void = noop,
  ): void {
    if (this.refuse(observations.length)) return;
    this.queues.pushFullView(observations, run, new Pending(observations.length, done));
    this.loop.kick();
  }

  /** Resolves once fewer than `limit` full-view members are waiting (or at shutdown). */
  whenReconcilingBelow(limit: number): Promise<void> {
    return this.stopped ? Promise.resolve() : this.queues.whenReconcilingBelow(limit);
  }

  /** Stops retrying; waits briefly for a batch under way; logs what is left uncompared. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.delay.interrupt();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.loop.stop(),
      new Promise((resolve) => (timer = setTimeout(resolve, STOP_GRACE_MS))),
    ]);
    clearTimeout(timer);
    const { live, reconciling } = this.queues.counts;
    const left = live + reconciling + this.inFlight.live + this.inFlight.reconcile;
    if (left > 0) {
      this.logger.warn(
        `${left} gateway observation(s) not compared before shutdown: the known names keep ` +
          'their old values, so the next full view of those servers finds any change',
      );
    }
    this.queues.clear();
  }

  private refuse(count: number): boolean {
    if (!this.stopped || count === 0) return false;
    this.logger.warn(`Ignored ${count} gateway observation(s) during shutdown`);
    return true;
  }

  /** One batch, until it succeeds; when the outbox stops first, it stays counted as left. */
  private async compareAndPublish({ queue, batch }: ObservationBatch): Promise<void> {
    this.inFlight = { live: 0, reconcile: 0, [queue]: batch.length };
    if (await this.compareAndPublishUntilDone(batch)) {
      this.inFlight = { live: 0, reconcile: 0 };
      for (const item of batch) item.pending?.settle();
    }
  }

  /** Until it succeeds (true) or the outbox stops (false). */
  private async compareAndPublishUntilDone(batch: QueuedObservation[]): Promise<boolean> {
    const observations = batch.map((item) => item.observation);
    // Set once a comparison has committed but its broadcast failed: only the broadcast is left.
    let committed: Comparison | undefined;
    let failures = 0;
    while (!this.stopped) {
      let comparison: Comparison | undefined;
      try {
        const outcomes = await this.nameEvents.publishDetected(EVERY_PARTITION, async () => {
          // Users who opted out are neither compared nor remembered: checked on every attempt,
          // under the detect lock, which an opt-out takes exclusively.
          const optedOut = await this.nameEvents.refusedAmong(observations.map((o) => o.userId));
          if (committed) {
            committed = withoutUsers(committed, optedOut);
            return committed.changes.map(withoutSource);
          }
          const known = await this.knownNames.findOfMembers(observedMembers(observations));
          comparison = withoutUsers(compareWithKnown(observations, known), optedOut);
          await this.knownNames.saveMany(comparison.updates, known);
          return comparison.changes.map(withoutSource);
        });
        this.report(batch, (committed ?? comparison)!, outcomes);
        return true;
      } catch (error) {
        if (error instanceof BusUnavailableError && comparison) committed = comparison;
        failures += 1;
        this.metrics.detectorPublishFailures.inc();
        const wait = Math.min(
          this.settings.publishRetryMs * 2 ** (failures - 1),
          this.settings.publishRetryMaxMs,
        );
        this.logger.warn(
          `Could not ${committed ? 'broadcast the name changes found in' : 'compare and publish'} ` +
            `${batch.length} gateway observation(s) (attempt ${failures}; next in ${wait} ms): ` +
            `${(error as Error).name}: ${(error as Error).message}` +
            (committed ? `: ${committed.changes.map(show).join(', ')}` : ''),
        );
        await this.delay.wait(wait);
      }
    }
    return false;
  }

  private report(
    batch: QueuedObservation[],
    comparison: Comparison,
    outcomes: PublishOutcome[],
  ): void {
    const changesByRun = new Map<ReconciliationRun, number>();
    comparison.changes.forEach((change, i) => {
      const { event, created, receivers } = outcomes[i];
      const run = batch[change.source].run;
      if (run) changesByRun.set(run, (changesByRun.get(run) ?? 0) + 1);
      this.logger.log(
        `Recorded a ${change.type} change of user ${change.userId} as event ${event.id}` +
          `${run ? ' (found by reconciliation)' : ''}${created ? '' : ' (stored already)'}; ` +
          (receivers === 0
            ? 'no listener connected'
            : `sent to ${receivers} instance(s) with listeners`),
      );
    });
    for (const { userId, type } of comparison.unrecordable) {
      this.logger.warn(`Ignored a ${type} change of user ${userId}: the old name cannot be stored`);
    }
    const comparedByRun = new Map<ReconciliationRun, number>();
    for (const { run } of batch) {
      if (run) comparedByRun.set(run, (comparedByRun.get(run) ?? 0) + 1);
    }
    const reconciled = batch.filter((item) => item.run).length;
    const found = comparison.changes.filter((change) => batch[change.source].run).length;
    const { detectorMembersCompared: compared, detectorChanges: changes } = this.metrics;
    compared.inc({ source: 'reconciliation' }, reconciled);
    compared.inc({ source: 'live' }, batch.length - reconciled);
    changes.inc({ source: 'reconciliation' }, found);
    changes.inc({ source: 'live' }, comparison.changes.length - found);
    for (const [run, count] of comparedByRun) run.compared(count, changesByRun.get(run) ?? 0);
  }
}

function noop(): void {}

function withoutSource({ source: _, ...change }: Comparison['changes'][number]) {
  return change;
}

function show(change: Comparison['changes'][number]): string {
  const { userId, type, name, changedAt } = change;
  return JSON.stringify({ userId, type, name, changedAt: changedAt.toISOString() });
}

/** The comparison without what concerns `userIds` (users who opted out). */
function withoutUsers(comparison: Comparison, userIds: ReadonlySet<string>): Comparison {
  if (userIds.size === 0) return comparison;
  return {
    ...comparison,
    changes: comparison.changes.filter((change) => !userIds.has(change.userId)),
    updates: comparison.updates.filter((update) => !userIds.has(update.userId)),
  };
}
