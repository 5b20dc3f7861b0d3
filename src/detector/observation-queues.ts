import type { Logger } from '@nestjs/common';
import { Fifo } from '../common/fifo.js';
import type { MemberObservation } from './member-observation.js';
import type { ReconciliationRun } from './reconciliation-run.js';

/** The observations of one dispatch not yet settled; `done` once none is left. */
export class Pending {
  constructor(
    private left: number,
    private readonly done: () => void,
  ) {
    if (left === 0) done();
  }

  /** One observation compared (or dropped). */
  settle(): void {
    this.left -= 1;
    if (this.left === 0) this.done();
  }
}

export interface QueuedObservation {
  observation: MemberObservation;
  /** The dispatch it came in. */
  pending?: Pending;
  /** Set for a member of a full view. */
  run?: ReconciliationRun;
  /** Moved to the live queue, ahead of a live update of the same user: skip it here. */
  promoted?: boolean;
}

export interface ObservationBatch {
  queue: 'live' | 'reconcile';
  batch: QueuedObservation[];
}

/**
 * The detector's two queues. Live updates go first: the members of a full view (thousands at
 * a time) wait in a queue of their own and are taken whenever no live update is waiting, so
 * reconciling a large server never holds up a change seen live. Order per user is kept all
 * the same: a live update of a user takes that user's waiting full-view members along, ahead
 * of itself. Both are bounded; past a bound, observations are dropped (and logged): the known
 * names keep the old values, so the next full view of those servers finds the changes. For a
 * live update dropped, that view is asked for at once (`liveDropped`): it waits in the other
 * queue, which has room, and is compared once the live updates are.
 */
export class ObservationQueues {
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
  private readonly roomWaiters: { limit: number; resolve: () => void }[] = [];

  constructor(
    private readonly bounds: { maxPending: number; maxReconciling: number },
    private readonly logger: Logger,
    /** Told the server of each live update dropped, for its members to be asked for again. */
    private readonly liveDropped: (guildId: string) => void = () => undefined,
    /** Told after observations are queued. */
    private readonly queued: () => void = () => undefined,
  ) {}

  /** Observations waiting, by queue. */
  get counts(): { live: number; reconciling: number } {
    return { live: this.live.length, reconciling: this.reconcilingCount };
  }

  pushLive(observations: readonly MemberObservation[], pending?: Pending): void {
    for (const observation of observations) {
      if (this.live.length >= this.bounds.maxPending) {
        pending?.settle();
        // Only reachable during a long outage: memory stays bounded.
        this.logger.error(
          `Dropped a live update of user ${observation.userId}: ${this.live.length} are waiting ` +
            `to be compared; server ${observation.guildId}'s members are asked for again`,
        );
        this.liveDropped(observation.guildId);
        continue;
      }
      this.promoteWaiting(observation.userId);
      this.live.push({ observation, pending });
    }
    this.queued();
  }

  pushFullView(
    observations: readonly MemberObservation[],
    run: ReconciliationRun,
    pending?: Pending,
  ): void {
    const room = Math.max(0, this.bounds.maxReconciling - this.reconcilingCount);
    const accepted = observations.slice(0, room);
    for (let i = accepted.length; i < observations.length; i++) pending?.settle();
    run.arrived(accepted.length);
    for (const observation of accepted) {
      const item: QueuedObservation = { observation, run, pending };
      this.reconciling.push(item);
      this.reconcilingCount += 1;
      const { userId } = observation;
      this.waitingByUser.set(userId, (this.waitingByUser.get(userId) ?? 0) + 1);
    }
    if (accepted.length < observations.length) {
      this.logger.error(
        `Dropped ${observations.length - accepted.length} member(s) of server ${run.guildId} ` +
          `from reconciliation: ${this.reconcilingCount} are waiting`,
      );
    }
    this.queued();
  }

  /** The next batch of at most `size`: live updates first. */
  take(size: number): ObservationBatch | undefined {
    if (this.live.length > 0) return { queue: 'live', batch: this.live.splice(0, size) };
    const batch: QueuedObservation[] = [];
    while (batch.length < size && this.reconciling.length > 0) {
      const item = this.reconciling.shift()!;
      if (item.promoted) continue;
      this.reconcilingCount -= 1;
      this.takenOne(item.observation.userId);
      batch.push(item);
    }
    this.notifyRoom();
    return batch.length > 0 ? { queue: 'reconcile', batch } : undefined;
  }

  /** Resolves once fewer than `limit` full-view members wait (or once cleared). */
  whenReconcilingBelow(limit: number): Promise<void> {
    if (this.reconcilingCount < limit) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push({ limit, resolve }));
  }

  /** Drops everything waiting, and lets every waiter for room go. */
  clear(): void {
    this.live.length = 0;
    this.reconciling.clear();
    this.waitingByUser.clear();
    this.reconcilingCount = 0;
    this.notifyRoom();
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
      this.live.push({ observation: item.observation, run: item.run, pending: item.pending });
      if (--waiting === 0) break;
    }
  }

  private takenOne(userId: string): void {
    const left = (this.waitingByUser.get(userId) ?? 0) - 1;
    if (left > 0) this.waitingByUser.set(userId, left);
    else this.waitingByUser.delete(userId);
  }

  private notifyRoom(): void {
    for (let i = this.roomWaiters.length - 1; i >= 0; i--) {
      const waiter = this.roomWaiters[i];
      if (this.reconcilingCount < waiter.limit) {
        this.roomWaiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }
}
