import type { Logger } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';
import { BusUnavailableError } from '../bus/index.js';
import { DrainLoop } from '../common/drain-loop.js';
import type { DetectorMetrics } from './detector.metrics.js';
import type {
  KnownNamesRepository,
  NameEventsService,
  PublishOutcome,
} from '../name-events/index.js';
import type { DetectorSettings } from './detector.settings.js';
import type { ShardProgressRepository } from './shard-progress.repository.js';
import { compareWithKnown, observedMembers, type Comparison } from './name-change-rules.js';
import {
  ObservationQueues,
  type ObservationBatch,
  type QueuedObservation,
} from './observation-queues.js';
import type { ReconciliationRun } from './reconciliation-run.js';

/** What every lane of one outbox shares. */
export interface LaneContext {
  nameEvents: NameEventsService;
  knownNames: KnownNamesRepository;
  progress: ShardProgressRepository;
  settings: DetectorSettings;
  metrics: DetectorMetrics;
  logger: Logger;
}

/**
 * The observations of some user partitions (`userPartitionOf`), compared with the known names
 * one batch at a time, live updates first (ObservationQueues), each batch in one transaction
 * under the locks of the lane's partitions. Lanes of other partitions run alongside, each on
 * a Postgres connection of its own: the database compares one batch while the process
 * prepares the next.
 *
 * A failure is logged and the same batch retried with back-off for as long as the lane
 * runs: a storage or broker outage costs latency, not events.
 */
export class CompareLane {
  readonly queues: ObservationQueues;
  /** The size of the batch under way, by the queue it came from. */
  inFlight = { live: 0, reconciling: 0 };
  /** Aborted at `stop()`: ends a retry's wait at once. */
  private readonly stopping = new AbortController();
  private readonly loop = new DrainLoop<ObservationBatch>(
    () => this.queues.take(this.context.settings.batchSize),
    (next) => this.compareAndPublish(next),
    (error) =>
      this.context.logger.error(
        `Name change detection stopped: ${(error as Error).stack ?? String(error)}`,
      ),
  );

  constructor(
    private readonly context: LaneContext,
    /** The user partitions whose observations come here. */
    private readonly partitions: readonly number[],
    bounds: { maxPending: number; maxReconciling: number },
    liveDropped: (guildId: string) => void,
  ) {
    this.queues = new ObservationQueues(bounds, context.logger, liveDropped, () =>
      this.loop.kick(),
    );
  }

  /** Stops retrying; resolves once the batch under way (if any) is done. */
  stop(): Promise<void> {
    this.stopping.abort();
    return this.loop.stop();
  }

  /**
   * One batch, until it succeeds; when the lane stops first, it stays counted as in flight.
   * A batch of the live queue is the only one whose observations have a place in a gateway
   * session (full views have none).
   */
  private async compareAndPublish({ queue, batch }: ObservationBatch): Promise<void> {
    const live = queue === 'live';
    this.inFlight = live
      ? { live: batch.length, reconciling: 0 }
      : { live: 0, reconciling: batch.length };
    const { nameEvents, knownNames, progress, settings, metrics, logger } = this.context;
    const observations = batch.map((item) => item.observation);
    // Set once a comparison has committed but its broadcast failed: only the broadcast is left.
    let committed: Comparison | undefined;
    let failures = 0;
    while (!this.stopping.signal.aborted) {
      let comparison: Comparison | undefined;
      try {
        const outcomes = await nameEvents.publishDetected(this.partitions, async () => {
          // Users who opted out are neither compared nor remembered: checked on every attempt,
          // under the partition lock of each user, which an opt-out of that user takes too.
          const optedOut = await nameEvents.refusedAmong(observations.map((o) => o.userId));
          if (committed) {
            committed = withoutUsers(committed, optedOut);
            return committed.changes.map(withoutSource);
          }
          const known = await knownNames.findOfMembers(observedMembers(observations));
          const stored = live ? await progress.storedAmong(observations) : undefined;
          comparison = withoutUsers(compareWithKnown(observations, known, stored), optedOut);
          await knownNames.saveMany(comparison.updates, known);
          if (live) await progress.save(observations);
          return comparison.changes.map(withoutSource);
        });
        this.report(batch, (committed ?? comparison)!, outcomes);
        this.inFlight = { live: 0, reconciling: 0 };
        for (const item of batch) item.pending?.settle();
        return;
      } catch (error) {
        if (error instanceof BusUnavailableError && comparison) committed = comparison;
        failures += 1;
        metrics.detectorPublishFailures.inc();
        const wait = Math.min(
          settings.publishRetryMs * 2 ** (failures - 1),
          settings.publishRetryMaxMs,
        );
        logger.warn(
          `Could not ${committed ? 'broadcast the name changes found in' : 'compare and publish'} ` +
            `${batch.length} gateway observation(s) (attempt ${failures}; next in ${wait} ms): ` +
            `${(error as Error).name}: ${(error as Error).message}` +
            (committed ? `: ${committed.changes.map(show).join(', ')}` : ''),
        );
        await delay(wait, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      }
    }
  }

  private report(
    batch: QueuedObservation[],
    comparison: Comparison,
    outcomes: PublishOutcome[],
  ): void {
    const { metrics, logger } = this.context;
    const changesByRun = new Map<ReconciliationRun, number>();
    comparison.changes.forEach((change, i) => {
      const { event, created, receivers } = outcomes[i];
      const run = batch[change.source].run;
      if (run) changesByRun.set(run, (changesByRun.get(run) ?? 0) + 1);
      logger.log(
        `Recorded a ${change.type} change of user ${change.userId} as event ${event.id}` +
          `${run ? ' (found by reconciliation)' : ''}${created ? '' : ' (stored already)'}; ` +
          (receivers === 0
            ? 'no listener connected'
            : `sent to ${receivers} instance(s) with listeners`),
      );
    });
    for (const { userId, type } of comparison.unrecordable) {
      logger.warn(`Ignored a ${type} change of user ${userId}: the old name cannot be stored`);
    }
    const comparedByRun = new Map<ReconciliationRun, number>();
    for (const { run } of batch) {
      if (run) comparedByRun.set(run, (comparedByRun.get(run) ?? 0) + 1);
    }
    const reconciled = batch.filter((item) => item.run).length;
    const found = comparison.changes.filter((change) => batch[change.source].run).length;
    const { detectorMembersCompared: compared, detectorChanges: changes } = metrics;
    compared.inc({ source: 'reconciliation' }, reconciled);
    compared.inc({ source: 'live' }, batch.length - reconciled);
    changes.inc({ source: 'reconciliation' }, found);
    changes.inc({ source: 'live' }, comparison.changes.length - found);
    for (const [run, count] of comparedByRun) run.compared(count, changesByRun.get(run) ?? 0);
  }
}

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
