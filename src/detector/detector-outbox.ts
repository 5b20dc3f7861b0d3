import { Inject, Injectable, Logger } from '@nestjs/common';
import { BusUnavailableError } from '../bus/name-event-bus.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { KnownNamesRepository } from '../name-events/known-names.repository.js';
import { NameEventsService } from '../name-events/name-events.service.js';
import type { PublishOutcome } from '../name-events/name-event.types.js';
import { DETECTOR_SETTINGS, type DetectorSettings } from './detector.settings.js';
import { InterruptibleDelay } from './interruptible-delay.js';
import type { MemberObservation } from './member-observation.js';
import { compareWithKnown, knownNameKeys, type Comparison } from './name-change-rules.js';
import type { ReconciliationRun } from './reconciliation-run.js';

/** How long shutdown waits for a batch already under way. */
const STOP_GRACE_MS = 5_000;

interface Item {
  observation: MemberObservation;
  /** Set for a member of a full view. */
  run?: ReconciliationRun;
  /** Moved to the live queue, ahead of a live update of the same user: skip it here. */
  promoted?: boolean;
}

/**
 * Gateway observations on their way to the known names and the publish path: each batch is
 * compared with the last known names, and the changes found are stored with the names they
 * move forward, then broadcast (NameEventsService.publishDetected), one batch at a time.
 *
 * Live updates go first: the members of a full view (thousands at a time) wait in a queue of
 * their own and are compared in batches whenever no live update is waiting, so reconciling a
 * large server never holds up a change seen live. Order per user is kept all the same: a live
 * update of a user takes that user's waiting full-view members along, ahead of itself.
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
  private readonly live: Item[] = [];
  private readonly reconciling = new Fifo<Item>();
  /** Members of full views waiting (promoted ones excluded). */
  private reconcilingCount = 0;
  /** Each user's waiting full-view members, oldest first: what a live update takes along. */
  private readonly waitingByUser = new Map<string, Item[]>();
  private readonly roomWaiters: { limit: number; resolve: () => void }[] = [];
  /** The batch under way, by the queue it came from. */
  private inFlight = { live: 0, reconcile: 0 };
  private draining: Promise<void> = Promise.resolve();
  private running = false;
  private stopped = false;
  private readonly delay = new InterruptibleDelay();

  constructor(
    private readonly nameEvents: NameEventsService,
    private readonly knownNames: KnownNamesRepository,
    @Inject(DETECTOR_SETTINGS) private readonly settings: DetectorSettings,
    private readonly metrics: MetricsService,
  ) {
    // Waiting or under way: 0 on both means every observation received has been compared.
    metrics.onCollect(() => {
      metrics.detectorBacklog.set({ queue: 'live' }, this.live.length + this.inFlight.live);
      metrics.detectorBacklog.set(
        { queue: 'reconcile' },
        this.reconcilingCount + this.inFlight.reconcile,
      );
    });
  }

  /** Observations waiting (the batch under way excluded). */
  get backlog(): { live: number; reconciling: number } {
    return { live: this.live.length, reconciling: this.reconcilingCount };
  }

  /** Members seen in live updates: compared first, in the order they arrived. */
  observeLive(observations: readonly MemberObservation[]): void {
    if (this.refuse(observations.length)) return;
    for (const observation of observations) {
      if (this.live.length >= this.settings.maxPending) {
        // Only reachable during a long outage: memory stays bounded, the known names keep
        // the old value, and the next full view of the server finds the change.
        this.logger.error(
          `Dropped a live update of user ${observation.userId}: ${this.live.length} are waiting ` +
            'to be compared; the next full view of the server compares it again',
        );
        continue;
      }
      const earlier = this.waitingByUser.get(observation.userId);
      if (earlier) {
        this.waitingByUser.delete(observation.userId);
        for (const item of earlier) {
          item.promoted = true;
          this.reconcilingCount -= 1;
          this.live.push({ observation: item.observation, run: item.run });
        }
      }
      this.live.push({ observation });
    }
    this.kick();
  }

  /** The members of a full view of a server: compared in batches, after live updates. */
  observeFullView(observations: readonly MemberObservation[], run: ReconciliationRun): void {
    if (this.refuse(observations.length)) return;
    const room = Math.max(0, this.settings.maxReconciling - this.reconcilingCount);
    const accepted = observations.slice(0, room);
    run.arrived(accepted.length);
    for (const observation of accepted) {
      const item: Item = { observation, run };
      this.reconciling.push(item);
      this.reconcilingCount += 1;
      const waiting = this.waitingByUser.get(observation.userId);
      if (waiting) waiting.push(item);
      else this.waitingByUser.set(observation.userId, [item]);
    }
    if (accepted.length < observations.length) {
      this.logger.error(
        `Dropped ${observations.length - accepted.length} member(s) of server ${run.guildId} ` +
          `from reconciliation: ${this.reconcilingCount} are waiting`,
      );
    }
    this.kick();
  }

  /** Resolves once fewer than `limit` full-view members are waiting (or at shutdown). */
  whenReconcilingBelow(limit: number): Promise<void> {
    if (this.stopped || this.reconcilingCount < limit) return Promise.resolve();
    return new Promise((resolve) => this.roomWaiters.push({ limit, resolve }));
  }

  /** Stops retrying; waits briefly for a batch under way; logs what is left uncompared. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.delay.interrupt();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.draining,
      new Promise((resolve) => (timer = setTimeout(resolve, STOP_GRACE_MS))),
    ]);
    clearTimeout(timer);
    const left =
      this.live.length + this.reconcilingCount + this.inFlight.live + this.inFlight.reconcile;
    if (left > 0) {
      this.logger.warn(
        `${left} gateway observation(s) not compared before shutdown: the known names keep ` +
          'their old values, so the next full view of those servers finds any change',
      );
    }
    this.live.length = 0;
    this.reconciling.clear();
    this.waitingByUser.clear();
    this.reconcilingCount = 0;
    this.notifyRoom();
  }

  private refuse(count: number): boolean {
    if (!this.stopped || count === 0) return false;
    this.logger.warn(`Ignored ${count} gateway observation(s) during shutdown`);
    return true;
  }

  private kick(): void {
    if (!this.running && !this.stopped) this.draining = this.drain();
  }

  private async drain(): Promise<void> {
    // Set and cleared synchronously, so an observation queued at any moment finds a drain running.
    this.running = true;
    try {
      while (!this.stopped) {
        const next = this.next();
        if (!next) break;
        this.inFlight = { live: 0, reconcile: 0, [next.queue]: next.batch.length };
        // Not done only when stopped: the batch stays counted as left uncompared.
        if (!(await this.compareAndPublish(next.batch))) break;
        this.inFlight = { live: 0, reconcile: 0 };
      }
    } catch (error) {
      this.logger.error(
        `Name change detection stopped: ${(error as Error).stack ?? String(error)}`,
      );
    } finally {
      this.running = false;
    }
  }

  private next(): { queue: 'live' | 'reconcile'; batch: Item[] } | undefined {
    if (this.live.length > 0) {
      return { queue: 'live', batch: this.live.splice(0, this.settings.batchSize) };
    }
    const batch: Item[] = [];
    while (batch.length < this.settings.batchSize && this.reconciling.length > 0) {
      const item = this.reconciling.shift()!;
      if (item.promoted) continue;
      this.reconcilingCount -= 1;
      const waiting = this.waitingByUser.get(item.observation.userId)!;
      // Each user's list is in queue order, so the item taken is its first.
      waiting.shift();
      if (waiting.length === 0) this.waitingByUser.delete(item.observation.userId);
      batch.push(item);
    }
    this.notifyRoom();
    return batch.length > 0 ? { queue: 'reconcile', batch } : undefined;
  }

  private notifyRoom(): void {
    for (let i = this.roomWaiters.length - 1; i >= 0; i--) {
      const waiter = this.roomWaiters[i];
      if (this.stopped || this.reconcilingCount < waiter.limit) {
        this.roomWaiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }

  /** Until it succeeds (true) or the outbox stops (false). */
  private async compareAndPublish(batch: Item[]): Promise<boolean> {
    const observations = batch.map((item) => item.observation);
    // Set once a comparison has committed but its broadcast failed: only the broadcast is left.
    let committed: Comparison | undefined;
    let failures = 0;
    while (!this.stopped) {
      let comparison: Comparison | undefined;
      try {
        const outcomes = await this.nameEvents.publishDetected(async () => {
          // Users who opted out are neither compared nor remembered: checked on every attempt,
          // under the detect lock, which an opt-out takes too.
          const optedOut = await this.nameEvents.refusedAmong(observations.map((o) => o.userId));
          if (committed) {
            committed = withoutUsers(committed, optedOut);
            return committed.changes.map(withoutSource);
          }
          const known = await this.knownNames.findMany(knownNameKeys(observations));
          comparison = withoutUsers(compareWithKnown(observations, known), optedOut);
          await this.knownNames.saveMany(comparison.updates);
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

  private report(batch: Item[], comparison: Comparison, outcomes: PublishOutcome[]): void {
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

function withoutSource({ source: _, ...change }: Comparison['changes'][number]) {
  return change;
}

function show(change: Comparison['changes'][number]): string {
  const { userId, type, name, changedAt } = change;
  return JSON.stringify({ userId, type, name, changedAt: changedAt.toISOString() });
}

/** A queue whose `shift` does not move the whole array. */
class Fifo<T> {
  private items: T[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined as T;
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  clear(): void {
    this.items = [];
    this.head = 0;
  }
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
