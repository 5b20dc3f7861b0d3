import Queue from 'yocto-queue';
import { compareBatch, type Batch, type QueuedObservation } from './compare-batch.js';
import type { DetectorOutbox } from './detector-outbox.js';
import type { MemberObservation } from './member-observation.js';
import type { ReconciliationRun } from './reconciliation-run.js';

export type Counts = { live: number; reconciling: number };

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
  private readonly reconciling = new Queue<QueuedObservation>();
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
      this.reconciling.enqueue({ observation, run, settle });
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
      if (!next) continue;
      // Stopped first (or failed unexpectedly): it stays counted as in flight.
      if (await compareBatch(this.outbox, this.partitions, next, this.stopping.signal)) {
        this.inFlight = { live: 0, reconciling: 0 };
      }
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
    while (batch.length < size && this.reconciling.size > 0) {
      const item = this.reconciling.dequeue()!;
      if (item.promoted) continue;
      this.reconcilingCount -= 1;
      const { userId } = item.observation;
      const left = (this.waitingByUser.get(userId) ?? 0) - 1;
      if (left > 0) this.waitingByUser.set(userId, left);
      else this.waitingByUser.delete(userId);
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

  private notifyRoom(): void {
    this.roomMade.resolve();
    this.roomMade = Promise.withResolvers<void>();
  }
}
