import { setTimeout as delay } from 'node:timers/promises';
import { BusUnavailableError } from '../bus/index.js';
import type { PublishOutcome } from '../name-events/index.js';
import type { DetectorOutbox } from './detector-outbox.js';
import type { MemberObservation } from './member-observation.js';
import { compareWithKnown, observedMembers, type Comparison } from './name-change-rules.js';
import type { ReconciliationRun } from './reconciliation-run.js';

export type Batch = { live: boolean; batch: QueuedObservation[] };

export interface QueuedObservation {
  observation: MemberObservation;
  /** Told once it is compared (or dropped): counts down the observations of its dispatch. */
  settle: () => void;
  /** Set for a member of a full view. */
  run?: ReconciliationRun;
  /** Moved to the live queue, ahead of a live update of the same user: skip it here. */
  promoted?: boolean;
}

/**
 * One batch of a lane (CompareLane) of `partitions`, compared with the known names and
 * published, tried again with back-off until it succeeds (true: its observations settled),
 * or until `stopping` aborts (false). A batch of the live queue is the only one whose observations have a place in a
 * gateway session (full views have none). Every failure that can be expected is retried
 * within: anything else costs the batch (logged; false).
 */
export async function compareBatch(
  outbox: DetectorOutbox,
  partitions: readonly number[],
  { live, batch }: Batch,
  stopping: AbortSignal,
): Promise<boolean> {
  const { nameEvents, knownNames, progress, settings, metrics, logger } = outbox;
  const observations = batch.map((item) => item.observation);
  // Set once a comparison has committed but its broadcast failed: only the broadcast is left.
  let committed: Comparison | undefined;
  let failures = 0;
  try {
    while (!stopping.aborted) {
      let comparison: Comparison | undefined;
      try {
        const outcomes = await nameEvents.publishDetected(partitions, async () => {
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
        report(outbox, batch, (committed ?? comparison)!, outcomes);
        for (const item of batch) item.settle();
        return true;
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
        await delay(wait, undefined, { signal: stopping }).catch(() => undefined);
      }
    }
  } catch (error) {
    logger.error(`Name change detection stopped: ${(error as Error).stack ?? String(error)}`);
  }
  return false;
}

function report(
  { metrics, logger }: DetectorOutbox,
  batch: QueuedObservation[],
  comparison: Comparison,
  outcomes: PublishOutcome[],
): void {
  comparison.changes.forEach((change, i) => {
    const { event, created, receivers } = outcomes[i];
    const run = batch[change.source].run;
    if (run) run.changes += 1;
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
  const reconciled = batch.filter((item) => item.run).length;
  const found = comparison.changes.filter((change) => batch[change.source].run).length;
  const { detectorMembersCompared: compared, detectorChanges: changes } = metrics;
  compared.inc({ source: 'reconciliation' }, reconciled);
  compared.inc({ source: 'live' }, batch.length - reconciled);
  changes.inc({ source: 'reconciliation' }, found);
  changes.inc({ source: 'live' }, comparison.changes.length - found);
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
