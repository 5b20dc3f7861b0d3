import { Injectable } from '@nestjs/common';
import { BusUnavailableError, NameEventBus } from '../bus/index.js';
import { NameEventsMetrics } from './name-events.metrics.js';
import { KnownNamesRepository } from './known-names.repository.js';
import { NameEventLogRepository } from './name-event-log.repository.js';
import { NameEventLocks } from './name-event-locks.js';
import { NameEventRemovalsService } from './name-event-removals.service.js';
import {
  RecordingRefusedError,
  type NewNameEvent,
  type PublishOutcome,
  type StoredOutcome,
} from './name-event.types.js';
import { RecordingGuardsService } from './recording-guards.service.js';
import { WakeSignal } from '../common/wake-signal.js';

/**
 * The name-event domain's write side, in one place. Every event enters through `publish`
 * (POST) or `publishDetected` (the detector): stored, then broadcast, under the publish lock
 * (NameEventLocks) held across the insert and the broker's acknowledgement, so events reach
 * every listener on every instance, and every consumer, in the order of their ids. What
 * removes events (erasure, retention) goes through here too, under the same lock.
 */
@Injectable()
export class NameEventsService {
  /**
   * Notified whenever this instance may have stored events (for the consumers of the event
   * log, which it wakes).
   */
  readonly stored = new WakeSignal();

  constructor(
    private readonly events: NameEventLogRepository,
    private readonly knownNames: KnownNamesRepository,
    private readonly locks: NameEventLocks,
    private readonly guards: RecordingGuardsService,
    private readonly bus: NameEventBus,
    private readonly metrics: NameEventsMetrics,
    private readonly removals: NameEventRemovalsService,
  ) {}

  /**
   * Rejects with StorageUnavailableError (nothing stored, nothing sent),
   * BusUnavailableError (stored, not sent: a retry sends it with the same id), or
   * RecordingRefusedError (nothing stored, nothing sent).
   */
  async publish(change: NewNameEvent): Promise<PublishOutcome> {
    const startedAt = Date.now();
    const stopTimer = this.metrics.publishDuration.startTimer();
    try {
      const outcome = await this.storeAndBroadcast(change, startedAt);
      stopTimer();
      this.count(outcome);
      return outcome;
    } catch (error) {
      stopTimer();
      if (error instanceof BusUnavailableError) {
        this.metrics.eventsUndelivered.inc({ reason: 'bus_unavailable' });
      } else if (error instanceof RecordingRefusedError) {
        this.metrics.eventsRefused.inc({ reason: 'opted_out' });
      }
      throw error;
    }
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
      if (outcomes.length > 0) this.stored.notify();
      return outcomes;
    } catch (error) {
      if (error instanceof BusUnavailableError) {
        this.metrics.eventsUndelivered.inc({ reason: 'bus_unavailable' }, undelivered);
        this.stored.notify();
      }
      throw error;
    }
  }

  /** Of `userIds`, those who must not be recorded (see RecordingGuardsService). */
  refusedAmong(userIds: readonly string[]): Promise<Set<string>> {
    return this.guards.refusedAmong(userIds);
  }

  /**
   * Deletes every event and known name of the user, under the user's partition lock and the
   * publish lock, so that a publish, or a comparison of the user by the detector, is wholly
   * before (erased) or wholly after; `optOut` runs first in the same transaction (recording
   * the opt-out). Once committed, emits `user.erased` (or `user.opted-out`) and
   * `events.removed` here, and tells the other instances. Returns how many events.
   */
  async eraseUser(userId: string, optOut?: () => Promise<void>): Promise<number> {
    const deleted = await this.locks.underUserLocks(userId, async () => {
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

  /**
   * One insert and one PUBLISH, under the publish lock. A user the guards refuse is refused
   * under the same lock: an opt-out is either wholly before the publish (refused) or wholly
   * after it (erased).
   */
  private storeAndBroadcast(change: NewNameEvent, startedAt: number): Promise<PublishOutcome> {
    return this.locks.underPublishLock(async () => {
      const refused = await this.guards.refusedAmong([change.userId]);
      if (refused.size > 0) throw new RecordingRefusedError(change.userId);
      const stored = await this.events.insertOrFindMany([change]);
      try {
        const [published] = await this.broadcast(stored, startedAt);
        return published;
      } finally {
        // Stored even when the broadcast failed (BusUnavailableError).
        this.stored.notify();
      }
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
