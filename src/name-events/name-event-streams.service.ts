import { Injectable } from '@nestjs/common';
import { Observable } from 'rxjs';
import { BusUnavailableError, NameEventBus } from '../bus/name-event-bus.js';
import { withTimeout } from '../common/with-timeout.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { NameChangeEventRepository } from './name-change-event.repository.js';
import { NameEventStream } from './name-event-stream.js';
import type { StoredNameEvent } from './name-event.types.js';

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

/**
 * The name-event domain's live side: every stream opens through `openStream`, which starts
 * it where the publish order guarantees no gap: after the client's Last-Event-ID (replaying
 * the backlog), or at the newest id whose broadcast is done.
 */
@Injectable()
export class NameEventStreams {
  constructor(
    private readonly events: NameChangeEventRepository,
    private readonly bus: NameEventBus,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * Opens one listener's stream. Rejects with BusUnavailableError when live delivery cannot
   * be set up, and with StorageUnavailableError when a resume's backlog cannot be read; a new
   * stream opens without its starting id when the database cannot give it in time.
   */
  async openStream(options: OpenStreamOptions): Promise<OpenedStream> {
    const stream = new NameEventStream(await this.bus.subscribe(), options.userId);
    try {
      if (options.lastEventId !== undefined) {
        const backlog = await this.events.findNewestAfterId(options.lastEventId.toString(), {
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
}
