import { Injectable } from '@nestjs/common';
import { BusUnavailableError, NameEventBus } from '../bus/index.js';
import { withTimeout } from '../common/with-timeout.js';
import { NameEventsMetrics } from './name-events.metrics.js';
import { NameEventLogRepository } from './name-event-log.repository.js';
import { NameEventStream } from './name-event-stream.js';

/** How long a new stream waits for its starting id before it opens without one. */
const START_ID_TIMEOUT_MS = 2_000;
/** Events in one page of a replay: what a listener holds of it at most. */
export const REPLAY_PAGE_EVENTS = 100;

export interface OpenStreamOptions {
  /** Only this user's events (replay and live). */
  userId?: string;
  /** Replay the stored events after this id first. */
  lastEventId?: bigint;
  /** How many stored events a resume replays at most (the newest). */
  replayLimit: number;
}

/**
 * The name-event domain's live side: every stream opens through `openStream`, which starts
 * it where the publish order guarantees no gap: after the client's Last-Event-ID (replaying
 * the backlog), or at the newest id whose broadcast is done.
 */
@Injectable()
export class NameEventStreamsService {
  constructor(
    private readonly events: NameEventLogRepository,
    private readonly bus: NameEventBus,
    private readonly metrics: NameEventsMetrics,
  ) {}

  /**
   * Opens one listener's stream. Rejects with BusUnavailableError when live delivery cannot
   * be set up, and with StorageUnavailableError when a resume's replay window cannot be read; a new
   * stream opens without its starting id when the database cannot give it in time.
   */
  async openStream(options: OpenStreamOptions): Promise<NameEventStream> {
    const { userId, lastEventId, replayLimit } = options;
    const stream = new NameEventStream(await this.bus.subscribe(), userId);
    try {
      if (lastEventId !== undefined) {
        const window = await this.events.findReplayWindow(lastEventId.toString(), {
          userId,
          limit: replayLimit,
        });
        stream.resume(
          lastEventId,
          window && {
            first: BigInt(window.first),
            last: BigInt(window.last),
            readPage: (afterId: bigint) =>
              this.events.findPage(afterId.toString(), {
                upToId: window.last,
                userId,
                limit: REPLAY_PAGE_EVENTS,
              }),
            sent: () => this.metrics.eventsReplayed.inc(),
          },
        );
      } else {
        // Read after subscribing: anything stored later arrives live. Best effort: without the
        // database (down, or hung) the stream still opens, only without its starting id.
        stream.startId = await withTimeout(
          this.events.latestPublishedId(),
          START_ID_TIMEOUT_MS,
        ).catch(() => undefined);
        // Every event up to that id has been published; once those still on their way here
        // have arrived, they go out right behind the id. A client that leaves after reading
        // the id and resumes from it has missed nothing.
        if (stream.startId !== undefined) await this.bus.flush();
      }
      // The bus connection dropped meanwhile: live delivery cannot be promised.
      if (stream.failed) throw new BusUnavailableError('Live delivery broke during setup');
      return stream;
    } catch (error) {
      stream.close();
      throw error;
    }
  }
}
