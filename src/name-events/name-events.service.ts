import { Injectable } from '@nestjs/common';
import { BusUnavailableError, NameEventBus } from '../bus/name-event-bus.js';
import { DrainLoop } from '../common/drain-loop.js';
import { SqlService } from '../database/sql.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { KnownNamesRepository } from './known-names.repository.js';
import { NameChangeEventRepository, type StoredOutcome } from './name-change-event.repository.js';
import { NameEventLocks } from './name-event-locks.js';
import { NameEventRemovals } from './name-event-removals.service.js';
import {
  RecordingRefusedError,
  type NewNameEvent,
  type PublishOutcome,
} from './name-event.types.js';
import { RecordingGuards } from './recording-guards.service.js';

/** Publishes that wait while a batch is out go out together, up to this many. */
const MAX_BATCH = 200;

interface Pending {
  change: NewNameEvent;
  startedAt: number;
  resolve(outcome: PublishOutcome): void;
  reject(error: unknown): void;
}

/**
 * The name-event domain's write side, in one place. Every event enters through `publish`
 * (POST) or `publishDetected` (the detector): stored, then broadcast, under the publish lock
 * (NameEventLocks) held across the insert and the broker's acknowledgement, so events reach
 * every listener on every instance, and every consumer, in the order of their ids. What
 * removes events (erasure, retention) goes through here too, under the same lock.
 */
@Injectable()
export class NameEventsService {
  private readonly waiting: Pending[] = [];
  private readonly storedListeners: (() => void)[] = [];
  private readonly batches = new DrainLoop(
    () => (this.waiting.length > 0 ? this.waiting.splice(0, MAX_BATCH) : undefined),
    (batch) => this.publishBatch(batch),
  );

  constructor(
    private readonly events: NameChangeEventRepository,
    private readonly knownNames: KnownNamesRepository,
    private readonly locks: NameEventLocks,
    private readonly guards: RecordingGuards,
    private readonly bus: NameEventBus,
    private readonly sql: SqlService,
    private readonly metrics: MetricsService,
    private readonly removals: NameEventRemovals,
  ) {}

  /**
   * Rejects with StorageUnavailableError (nothing stored, nothing sent),
   * BusUnavailableError (stored, not sent: a retry sends it with the same id), or
   * RecordingRefusedError (nothing stored, nothing sent).
   */
  publish(change: NewNameEvent): Promise<PublishOutcome> {
    const stopTimer = this.metrics.publishDuration.startTimer();
    const outcome = new Promise<PublishOutcome>((resolve, reject) => {
      this.waiting.push({ change, startedAt: Date.now(), resolve, reject });
    });
    // The batches serve every caller: they never run on one caller's unit of work.
    this.sql.detached(() => this.batches.kick());
    return outcome.then(
      (result) => {
        stopTimer();
        this.count(result);
        return result;
      },
      (error: unknown) => {
        stopTimer();
        if (error instanceof BusUnavailableError) {
          this.metrics.eventsUndelivered.inc({ reason: 'bus_unavailable' });
        } else if (error instanceof RecordingRefusedError) {
          this.metrics.eventsRefused.inc({ reason: 'opted_out' });
        }
        throw error;
      },
    );
  }

  /**
   * The detector's way in: publishes what `detect` finds, with what it writes, atomically.
   * `detect` runs inside a transaction that holds the locks of `partitions`, which must hold
   * every user it compares (`userPartitionOf`): one comparison of a user at a time, across
   * instances (a lease takeover may overlap two detectors, and a user is in servers of many
   * shards), while users of other partitions are compared alongside. Every repository it
   * uses joins that transaction; it reads and moves forward the state it compares with, and
   * returns the changes it found. Only when there are some is the publish lock taken, as a
   * POST does; they are stored in the same transaction, then broadcast in id order, still
   * under the lock. A change and the state it moves forward commit together or not at all,
   * and a comparison that finds nothing never holds up a POST. Resolves with one outcome per
   * change, in order. Rejects with StorageUnavailableError (rolled back), BusUnavailableError
   * (committed, not sent: publishing the same changes again sends them with their ids), or
   * what `detect` threw.
   */
  async publishDetected(
    partitions: readonly number[],
    detect: () => Promise<NewNameEvent[]>,
  ): Promise<PublishOutcome[]> {
    const startedAt = Date.now();
    const stopTimer = this.metrics.publishDuration.startTimer();
    let undelivered = 0;
    try {
      const outcomes =
        (await this.locks.detectThenPublish(
          partitions,
          detect,
          (changes) => this.events.insertOrFindMany(changes),
          async (stored) => {
            undelivered = stored.length;
            return this.broadcast(stored, startedAt);
          },
        )) ?? [];
      stopTimer();
      for (const outcome of outcomes) this.count(outcome);
      if (outcomes.length > 0) this.announceStored();
      return outcomes;
    } catch (error) {
      if (error instanceof BusUnavailableError) {
        this.metrics.eventsUndelivered.inc({ reason: 'bus_unavailable' }, undelivered);
        this.announceStored();
      }
      throw error;
    }
  }

  /**
   * Calls `listener` whenever this instance may have stored events (for the consumers of the
   * event log, which it wakes).
   */
  onStored(listener: () => void): void {
    this.storedListeners.push(listener);
  }

  /** Of `userIds`, those who must not be recorded (see RecordingGuards). */
  refusedAmong(userIds: readonly string[]): Promise<Set<string>> {
    return this.guards.refusedAmong(userIds);
  }

  /**
   * Deletes every event and known name of the user, under both locks, so that a publish or a
   * comparison of the detector is wholly before (erased) or wholly after; `optOut` runs first
   * in the same transaction (recording the opt-out). Once committed, emits `user.erased` (or
   * `user.opted-out`) and `events.removed` here, and tells the other instances. Returns how
   * many events.
   */
  async eraseUser(userId: string, optOut?: () => Promise<void>): Promise<number> {
    const deleted = await this.locks.underAllLocks(async () => {
      await optOut?.();
      await this.knownNames.deleteOfUser(userId);
      const count = await this.events.deleteOfUser(userId);
      if (count > 0) await this.removals.announce(userId);
      return count;
    });
    this.removals.emit(optOut ? 'user.opted-out' : 'user.erased', { userId, deleted });
    if (deleted > 0) this.removals.emit('events.removed', { userId });
    return deleted;
  }

  /**
   * Deletes at most `limit` events that changed before `cutoff`, oldest first, in one short
   * statement under the publish lock; returns how many. Call again until it returns less than
   * `limit`: publishes go ahead between the calls. What it deletes is `events.removed`.
   */
  async eraseChangedBefore(cutoff: Date, limit: number): Promise<number> {
    const deleted = await this.locks.underPublishLock(async () => {
      const count = await this.events.deleteChangedBefore(cutoff, limit);
      if (count > 0) await this.removals.announce(null);
      return count;
    });
    if (deleted > 0) this.removals.emit('events.removed', { userId: null });
    return deleted;
  }

  private count(outcome: PublishOutcome): void {
    if (outcome.created) this.metrics.eventsStored.inc();
    if (outcome.receivers > 0) this.metrics.eventsBroadcast.inc();
    else this.metrics.eventsUndelivered.inc({ reason: 'no_listeners' });
  }

  private async publishBatch(batch: Pending[]): Promise<void> {
    try {
      const outcomes = await this.storeAndBroadcast(batch);
      batch.forEach((pending, i) => {
        const outcome = outcomes[i];
        if (outcome instanceof RecordingRefusedError) pending.reject(outcome);
        else pending.resolve(outcome);
      });
    } catch (error) {
      for (const pending of batch) pending.reject(error);
    } finally {
      // Stored even when the broadcast failed (BusUnavailableError).
      this.announceStored();
    }
  }

  private announceStored(): void {
    for (const listener of this.storedListeners) listener();
  }

  /**
   * One insert and one round of PUBLISH for the whole batch, under the publish lock. Users
   * the guards refuse are refused under the same lock: an opt-out is either wholly before
   * the batch (refused) or wholly after it (erased).
   */
  private storeAndBroadcast(batch: Pending[]): Promise<(PublishOutcome | RecordingRefusedError)[]> {
    return this.locks.underPublishLock(async () => {
      const refused = await this.guards.refusedAmong(batch.map((p) => p.change.userId));
      const accepted = batch.filter((pending) => !refused.has(pending.change.userId));
      const outcomes = new Map<Pending, PublishOutcome>();
      if (accepted.length > 0) {
        const stored = await this.events.insertOrFindMany(accepted.map((p) => p.change));
        const published = await this.broadcast(stored, accepted[0].startedAt);
        accepted.forEach((pending, i) => outcomes.set(pending, published[i]));
      }
      return batch.map(
        (pending) => outcomes.get(pending) ?? new RecordingRefusedError(pending.change.userId),
      );
    });
  }

  private async broadcast(stored: StoredOutcome[], startedAt: number): Promise<PublishOutcome[]> {
    const receivers = await this.bus.publish(
      stored.map((s) => s.event),
      startedAt,
    );
    return stored.map((s, i) => ({ ...s, receivers: receivers[i] }));
  }
}
