import { Injectable } from '@nestjs/common';
import { Observable } from 'rxjs';
import { BusUnavailableError, NameEventBus } from '../bus/name-event-bus.js';
import { withTimeout } from '../common/with-timeout.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { NameChangeEventRepository } from './name-change-event.repository.js';
import { NameEventStream } from './name-event-stream.js';
import {
  UserOptedOutError,
  type NewNameEvent,
  type PublishOutcome,
  type SqlSession,
  type StoredNameEvent,
} from './name-event.types.js';
import { PrivacyRepository } from './privacy.repository.js';

/** Publishes that wait while a batch is out go out together, up to this many. */
const MAX_BATCH = 200;

/** How long a new stream waits for its starting id before it opens without one. */
const START_ID_TIMEOUT_MS = 2_000;

export interface OpenStreamOptions {
  /** Only this user's events (replay and live). */
  userId?: string;
  /** Replay the stored events after this id first. */
  lastEventId?: bigint;
  /** How many stored events a resume replays at most (the newest). */
  replayLimit: number;
}

/** A stream, ready to be subscribed once (or closed unsubscribed). */
export interface OpenedStream {
  /**
   * Where a new stream starts: the newest id whose broadcast is done (unset when resuming, or
   * when the database could not say in time).
   */
  startId?: string;
  /** How many stored events it replays first. */
  replayed: number;
  /** The events; see NameEventStream.events for `pace`. */
  events(pace?: () => Promise<void> | undefined): Observable<StoredNameEvent>;
  /** Releases it without subscribing (the client left during setup). Idempotent. */
  close(): void;
}

interface Pending {
  change: NewNameEvent;
  startedAt: number;
  resolve(outcome: PublishOutcome): void;
  reject(error: unknown): void;
}

/**
 * The name-event domain's ordering protocol, in one place. Every event enters through
 * `publish` (POST and the detector): stored, then broadcast, under a Postgres advisory lock
 * held across the insert and the broker's acknowledgement, so events reach every listener on
 * every instance in the order of their ids. Every stream opens through `openStream`, which
 * starts it where that order guarantees no gap: after the client's Last-Event-ID (replaying
 * the backlog), or at the newest id whose broadcast is done.
 */
@Injectable()
export class NameEventsService {
  private waiting: Pending[] = [];
  private draining = false;

  constructor(
    private readonly events: NameChangeEventRepository,
    private readonly privacy: PrivacyRepository,
    private readonly bus: NameEventBus,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * Rejects with StorageUnavailableError (nothing stored, nothing sent),
   * BusUnavailableError (stored, not sent: a retry sends it with the same id), or
   * UserOptedOutError (nothing stored, nothing sent).
   */
  publish(change: NewNameEvent): Promise<PublishOutcome> {
    const stopTimer = this.metrics.publishDuration.startTimer();
    const outcome = new Promise<PublishOutcome>((resolve, reject) => {
      this.waiting.push({ change, startedAt: Date.now(), resolve, reject });
    });
    if (!this.draining) void this.drain();
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
        } else if (error instanceof UserOptedOutError) {
          this.metrics.eventsRefused.inc({ reason: 'opted_out' });
        }
        throw error;
      },
    );
  }

  /**
   * The detector's way in: publishes what `detect` finds, with what it writes, atomically.
   * `detect` runs on the storing session inside a transaction that holds the detect lock (one
   * comparison at a time across instances: a lease takeover may overlap two detectors); it
   * reads and moves forward the state it compares with and returns the changes it found. Only
   * when there are some is the publish lock taken, as a POST does; they are stored in the same
   * transaction, then broadcast in id order, still under the lock. A change and the state it
   * moves forward commit together or not at all, and a comparison that finds nothing never
   * holds up a POST. Resolves with one outcome per change, in order. Rejects with
   * StorageUnavailableError (rolled back), BusUnavailableError (committed, not sent:
   * publishing the same changes again sends them with their ids), or what `detect` threw.
   */
  async publishDetected(
    detect: (session: SqlSession) => Promise<NewNameEvent[]>,
  ): Promise<PublishOutcome[]> {
    const startedAt = Date.now();
    const stopTimer = this.metrics.publishDuration.startTimer();
    let undelivered = 0;
    try {
      const outcomes =
        (await this.events.storeDetected(detect, async (stored) => {
          undelivered = stored.length;
          const receivers = await this.bus.publish(
            stored.map((s) => s.event),
            startedAt,
          );
          return stored.map((s, i) => ({ ...s, receivers: receivers[i] }));
        })) ?? [];
      stopTimer();
      for (const outcome of outcomes) this.count(outcome);
      return outcomes;
    } catch (error) {
      if (error instanceof BusUnavailableError) {
        this.metrics.eventsUndelivered.inc({ reason: 'bus_unavailable' }, undelivered);
      }
      throw error;
    }
  }

  /**
   * Opens one listener's stream. Rejects with BusUnavailableError when live delivery cannot
   * be set up, and with StorageUnavailableError when a resume's backlog cannot be read; a new
   * stream opens without its starting id when the database cannot give it in time.
   */
  async openStream(options: OpenStreamOptions): Promise<OpenedStream> {
    const stream = new NameEventStream(await this.bus.subscribe(), options.userId);
    try {
      if (options.lastEventId !== undefined) {
        const backlog = await this.events.findAfterId(options.lastEventId.toString(), {
          userId: options.userId,
          limit: options.replayLimit,
        });
        if (stream.failed) throw new BusUnavailableError('Live delivery broke during setup');
        this.metrics.eventsReplayed.inc(backlog.length);
        return {
          replayed: backlog.length,
          events: (pace) => stream.events({ lastEventId: options.lastEventId, backlog }, pace),
          close: () => stream.close(),
        };
      }
      // Read after subscribing: anything stored later arrives live. Best effort: without the
      // database (down, or hung) the stream still opens, only without its starting id.
      const startId = await withTimeout(this.events.latestPublishedId(), START_ID_TIMEOUT_MS).catch(
        () => undefined,
      );
      // Every event up to that id has been published; once those still on their way here
      // have arrived, they go out right behind the id. A client that leaves after reading
      // the id and resumes from it has missed nothing.
      if (startId !== undefined) await this.bus.flush();
      // The bus connection dropped meanwhile: live delivery cannot be promised.
      if (stream.failed) throw new BusUnavailableError('Live delivery broke during setup');
      return {
        startId,
        replayed: 0,
        events: (pace) => stream.events({ backlog: [] }, pace),
        close: () => stream.close(),
      };
    } catch (error) {
      stream.close();
      throw error;
    }
  }

  private count(outcome: PublishOutcome): void {
    if (outcome.created) this.metrics.eventsStored.inc();
    if (outcome.receivers > 0) this.metrics.eventsBroadcast.inc();
    else this.metrics.eventsUndelivered.inc({ reason: 'no_listeners' });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0, MAX_BATCH);
        try {
          const outcomes = await this.storeAndBroadcast(batch);
          batch.forEach((pending, i) => {
            const outcome = outcomes[i];
            if (outcome instanceof UserOptedOutError) pending.reject(outcome);
            else pending.resolve(outcome);
          });
        } catch (error) {
          for (const pending of batch) pending.reject(error);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  /**
   * One insert and one round of PUBLISH for the whole batch, under the publish lock. Users
   * who opted out are refused under the same lock: an opt-out is either wholly before the
   * batch (refused) or wholly after it (erased).
   */
  private storeAndBroadcast(batch: Pending[]): Promise<(PublishOutcome | UserOptedOutError)[]> {
    return this.events.underPublishLock(async (session) => {
      const optedOut = await this.privacy.findOptedOut(
        batch.map((pending) => pending.change.userId),
        session,
      );
      const accepted = batch.filter((pending) => !optedOut.has(pending.change.userId));
      const outcomes = new Map<Pending, PublishOutcome>();
      if (accepted.length > 0) {
        const stored = await this.events.insertOrFindMany(
          accepted.map((pending) => pending.change),
          session,
        );
        const receivers = await this.bus.publish(
          stored.map((s) => s.event),
          accepted[0].startedAt,
        );
        accepted.forEach((pending, i) =>
          outcomes.set(pending, { ...stored[i], receivers: receivers[i] }),
        );
      }
      return batch.map(
        (pending) => outcomes.get(pending) ?? new UserOptedOutError(pending.change.userId),
      );
    });
  }
}
