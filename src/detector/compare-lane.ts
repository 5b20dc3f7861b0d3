import { setTimeout as delay } from 'node:timers/promises';
import { BusUnavailableError } from '../bus/index.js';
import { Fifo } from '../common/fifo.js';
import type { PublishOutcome } from '../name-events/index.js';
import type { DetectorOutbox } from './detector-outbox.js';
import type { MemberObservation } from './member-observation.js';
import { compareWithKnown, observedMembers, type Comparison } from './name-change-rules.js';
import type { ReconciliationRun } from './reconciliation-run.js';

export type Counts = { live: number; reconciling: number };
type Batch = { live: boolean; batch: QueuedObservation[] };

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
 * The observations of some user partitions (`userPartitionOf`), compared with the known names
 * one batch at a time, each batch in one transaction under the locks of the lane's
 * partitions. Lanes of other partitions run alongside, each on a Postgres connection of its
 * own: the database compares one batch while the process prepares the next.
 *
 * Two queues. Live updates go first: the members of a full view (thousands at a time) wait in
 * a queue of their own and are taken whenever no live update is waiting, so reconciling a
 * large server never holds up a change seen live. Order per user is kept all the same: a live
 * update of a user takes that user's waiting full-view members along, ahead of itself. Both
 * are bounded (the outbox's bounds shared out among the lanes); past a bound, observations
 * are dropped (and logged): the known names keep the old values, so the next full view of
 * those servers finds the changes. For a live update dropped, that view is asked for at once
 * (`onLiveDropped`): it waits in the other queue, which has room, and is compared once the
 * live updates are.
 *
 * A failure is logged and the same batch retried with back-off for as long as the lane
 * runs: a storage or broker outage costs latency, not events.
 */
export class CompareLane {
  /** The size of the batch under way, by the queue it came from. */
  private inFlight: Counts = { live: 0, reconciling: 0 };
  private readonly live: QueuedObservation[] = [];
  private readonly reconciling = new Fifo<QueuedObservation>();
  /** Members of full views waiting (promoted ones excluded). */
  private reconcilingCount = 0;
  /**
   * How many full-view members of each user wait: a live update of a user with some looks
   * for them in the queue and takes them along. A count, not the items: a table of tens of
   * thousands of entries is a large object in V8, and the copies it leaves as it grows and
   * shrinks would keep the items they held alive until the next full collection.
   */
  private readonly waitingByUser = new Map<string, number>();
  /** Resolved (and renewed) as full-view members are taken: `whenReconcilingBelow` waits on it. */
  private roomMade = Promise.withResolvers<void>();
  /** Aborted at `stop()`: ends the loop, and a retry's wait at once. */
  private readonly stopping = new AbortController();
  /** Hands the loop, while it waits, the batch taken as observations come (none: stop). */
  private wake?: (next: Batch | undefined) => void;
  private readonly loop: Promise<void>;

  constructor(
    private readonly outbox: DetectorOutbox,
    /** The user partitions whose observations come here. */
    private readonly partitions: readonly number[],
  ) {
    this.loop = this.compareAll();
  }

  /** Observations waiting or under way, by queue. */
  get counts(): Counts {
    const { live, reconciling } = this.inFlight;
    return { live: this.live.length + live, reconciling: this.reconcilingCount + reconciling };
  }

  pushLive(observations: readonly MemberObservation[], settle: () => void): void {
    const { settings, logger, liveDroppedListeners } = this.outbox;
    const bound = Math.ceil(settings.maxPending / settings.compareConcurrency);
    for (const observation of observations) {
      if (this.live.length >= bound) {
        settle();
        // Only reachable during a long outage: memory stays bounded.
        logger.error(
          `Dropped a live update of user ${observation.userId}: ${this.live.length} are waiting ` +
            `to be compared; server ${observation.guildId}'s members are asked for again`,
        );
        for (const listener of liveDroppedListeners) listener(observation.guildId);
        continue;
      }
      this.promoteWaiting(observation.userId);
      this.live.push({ observation, settle });
    }
    this.queued();
  }

  pushFullView(
    observations: readonly MemberObservation[],
    run: ReconciliationRun,
    settle: () => void,
  ): void {
    const { settings, logger } = this.outbox;
    const bound = Math.ceil(settings.maxReconciling / settings.compareConcurrency);
    const accepted = observations.slice(0, Math.max(0, bound - this.reconcilingCount));
    for (let i = accepted.length; i < observations.length; i++) settle();
    run.members += accepted.length;
    for (const observation of accepted) {
      this.reconciling.push({ observation, run, settle });
      this.reconcilingCount += 1;
      const { userId } = observation;
      this.waitingByUser.set(userId, (this.waitingByUser.get(userId) ?? 0) + 1);
    }
    if (accepted.length < observations.length) {
      logger.error(
        `Dropped ${observations.length - accepted.length} member(s) of server ${run.guildId} ` +
          `from reconciliation: ${this.reconcilingCount} are waiting`,
      );
    }
    this.queued();
  }

  /** Resolves once fewer than `limit` full-view members wait (or once cleared). */
  async whenReconcilingBelow(limit: number): Promise<void> {
    while (this.reconcilingCount >= limit) await this.roomMade.promise;
  }

  /** Stops retrying; resolves once the batch under way (if any) is done. */
  stop(): Promise<void> {
    this.stopping.abort();
    this.queued();
    return this.loop;
  }

  /** Drops everything waiting or left under way, and lets every waiter for room go. */
  clear(): void {
    this.inFlight = { live: 0, reconciling: 0 };
    this.live.length = 0;
    this.reconciling.clear();
    this.waitingByUser.clear();
    this.reconcilingCount = 0;
    this.notifyRoom();
  }

  /**
   * Taken in the same turn as the observations are queued (or the batch before is done), so
   * an idle lane starts on a dispatch's observations at once, without those queued after.
   */
  private queued(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.(this.stopping.signal.aborted ? undefined : this.take());
  }

  /** Batch after batch until the lane stops, waiting for observations whenever none is left. */
  private async compareAll(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      const next = this.take() ?? (await new Promise<Batch | undefined>((r) => (this.wake = r)));
      // Every failure that can be expected is retried within: anything else costs the batch.
      if (!next) continue;
      await this.compareAndPublish(next).catch((error: unknown) =>
        this.outbox.logger.error(
          `Name change detection stopped: ${(error as Error).stack ?? String(error)}`,
        ),
      );
    }
  }

  /** The next batch, counted as in flight from now: live updates first. */
  private take(): Batch | undefined {
    const size = this.outbox.settings.batchSize;
    if (this.live.length > 0) {
      const batch = this.live.splice(0, size);
      this.inFlight = { live: batch.length, reconciling: 0 };
      return { live: true, batch };
    }
    const batch: QueuedObservation[] = [];
    while (batch.length < size && this.reconciling.length > 0) {
      const item = this.reconciling.shift()!;
      if (item.promoted) continue;
      this.reconcilingCount -= 1;
      this.takenOne(item.observation.userId);
      batch.push(item);
    }
    this.notifyRoom();
    if (batch.length === 0) return undefined;
    this.inFlight = { live: 0, reconciling: batch.length };
    return { live: false, batch };
  }

  /**
   * Moves the user's waiting full-view members, oldest first, to the live queue: a scan of the
   * queue, made only for a user with members waiting (a live update during its server's
   * reconciliation), and stopped at the last of them.
   */
  private promoteWaiting(userId: string): void {
    let waiting = this.waitingByUser.get(userId) ?? 0;
    if (waiting === 0) return;
    this.waitingByUser.delete(userId);
    for (const item of this.reconciling) {
      if (item.promoted || item.observation.userId !== userId) continue;
      item.promoted = true;
      this.reconcilingCount -= 1;
      this.live.push({ observation: item.observation, run: item.run, settle: item.settle });
      if (--waiting === 0) break;
    }
  }

  private takenOne(userId: string): void {
    const left = (this.waitingByUser.get(userId) ?? 0) - 1;
    if (left > 0) this.waitingByUser.set(userId, left);
    else this.waitingByUser.delete(userId);
  }

  private notifyRoom(): void {
    this.roomMade.resolve();
    this.roomMade = Promise.withResolvers<void>();
  }

  /**
   * One batch, until it succeeds; when the lane stops first, it stays counted as in flight.
   * A batch of the live queue is the only one whose observations have a place in a gateway
   * session (full views have none).
   */
  private async compareAndPublish({ live, batch }: Batch): Promise<void> {
    const { nameEvents, knownNames, progress, settings, metrics, logger } = this.outbox;
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
        for (const item of batch) item.settle();
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
    const { metrics, logger } = this.outbox;
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
