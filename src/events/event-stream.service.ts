import {
  BeforeApplicationShutdown,
  Injectable,
  InternalServerErrorException,
  Logger,
  MessageEvent,
} from '@nestjs/common';
import type { Request } from 'express';
import { setTimeout as delay } from 'node:timers/promises';
import pLimit from 'p-limit';
import {
  EMPTY,
  Observable,
  Subject,
  catchError,
  defer,
  finalize,
  interval,
  map,
  merge,
  of,
  share,
} from 'rxjs';
import { requestIdOf } from '../common/logger.js';
import { StorageUnavailableError } from '../database/index.js';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { EventsMetrics } from './events.metrics.js';
import {
  ListenerOverflowError,
  NameEventStreamsService,
  type NameEventStream,
  type StoredNameEvent,
  type StreamPacing,
} from '../name-events/index.js';
import { frameOf, KEEP_ALIVE } from './event-frames.js';
import { sseConfig } from './events.config.js';
import { ListenerAdmission } from './listener-admission.js';
import { ListenerBuffer, ListenerStalledError, type Frame } from './listener-buffer.js';

export const STREAM_SETUP_FAILED = 'Error establishing the event stream connection';

/** At shutdown, streams end in waves over this window, so their clients do not all reconnect at once. */
const HANDOVER_WINDOW_MS = 500;
const HANDOVER_WAVES = 10;
/** The `retry:` of a stream ended at shutdown: reconnect (to another instance) at once. */
const HANDOVER_RETRY_MS = 100;

/** What a hand-over wave sends its listeners: end, with a short `retry:`. */
const HANDOVER = Symbol('handover');

/** Why a stream ended, as its close log line says it. */
type CloseReason = 'client' | 'slow' | 'shutdown' | 'bus' | 'storage';

export interface ListenOptions {
  userId?: string;
  /** Replay the stored events after this id first. */
  lastEventId?: bigint;
}

/**
 * The live stream, as Observables for Nest's `@Sse()`. A listener's Observable is its opening
 * message (where its stream starts, and `retry:`), then its replay and live events from the
 * name-event domain merged with the instance's keep-alive comments and, at shutdown, a
 * hand-over; what waits for it is bounded by its ListenerBuffer. An event is turned into its
 * message once (frameOf).
 */
@Injectable()
export class EventStreamService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('EventStream');
  /** The waves of the hand-over at shutdown: each listener ends with its own. */
  private readonly handovers = Array.from(
    { length: HANDOVER_WAVES },
    () => new Subject<typeof HANDOVER>(),
  );
  /**
   * What each wave's listeners get besides their events, shared by them: the keep-alive
   * comments (one timer per instance, running while anyone listens) and the wave's hand-over.
   */
  private readonly signals: Observable<Frame | typeof HANDOVER>[];
  private connected = 0;
  /** The caps, which streams being set up count against already. */
  private readonly admission;
  /** Replays' page reads: at most SSE_REPLAY_CONCURRENCY at once; the others wait their turn. */
  private readonly replayPages;
  private opened = 0;
  private closing = false;

  constructor(
    private readonly nameEvents: NameEventStreamsService,
    private readonly metrics: EventsMetrics,
    @InjectConfig(sseConfig) private readonly sse: ConfigOf<typeof sseConfig>,
  ) {
    const keepAlive$ = interval(sse.keepAliveMs).pipe(
      map(() => KEEP_ALIVE),
      share(),
    );
    this.signals = this.handovers.map((handover$) => merge(keepAlive$, handover$).pipe(share()));
    this.replayPages = pLimit(sse.replayConcurrency);
    this.admission = new ListenerAdmission(sse.maxListeners, sse.maxListenersPerAddress);
    metrics.onCollect(() => metrics.listeners.set(this.connected));
  }

  /** Listeners connected to this instance, or being set up. */
  get listenerCount(): number {
    return this.admission.count;
  }

  /**
   * Sets a stream up: rejects (before any byte is sent) with a 503 when this instance is
   * full, a 429 when the client's address holds its share already, and a 500 when live
   * delivery or the replay window cannot be set up; while the instance
   * stops, the stream only tells the client to come back (see `handedOver`). `signal` is the
   * request's: aborted when the client leaves, even during setup.
   */
  async open(
    req: Request,
    options: ListenOptions,
    signal: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    if (this.closing) return this.handedOver(options);
    const leave = this.admission.admit(req);
    let opened: NameEventStream;
    try {
      opened = await this.nameEvents.openStream({ ...options, replayLimit: this.sse.replayLimit });
    } catch (error) {
      leave();
      throw new InternalServerErrorException(STREAM_SETUP_FAILED, { cause: error });
    }
    // Nest never subscribes once the client has left: the stream is released either way.
    const abandon = () => {
      leave();
      opened.close();
    };
    if (signal.aborted || this.closing) {
      abandon();
      return signal.aborted ? EMPTY : this.handedOver(options);
    }
    signal.addEventListener('abort', abandon, { once: true });
    return defer(() => {
      // Subscribed: from here the stream's own teardown releases it.
      signal.removeEventListener('abort', abandon);
      return this.listen(req, opened, options).pipe(finalize(leave));
    });
  }

  /**
   * Streams end before the HTTP server closes, or it would wait for them forever: in waves,
   * each with a short `retry:`, so their clients reconnect to another instance at once and
   * the others stay connected meanwhile.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    if (this.connected === 0) return;
    this.logger.log(`Handing ${this.connected} stream(s) over to other instances`);
    for (let wave = 0; wave < HANDOVER_WAVES; wave++) {
      if (wave > 0) await delay(HANDOVER_WINDOW_MS / HANDOVER_WAVES);
      this.handovers[wave].next(HANDOVER);
      this.handovers[wave].complete();
    }
  }

  /** One listener's stream, once Nest subscribes. */
  private listen(req: Request, opened: NameEventStream, options: ListenOptions) {
    // The id the client keeps: where its stream starts, or where it resumes from. Never
    // unset, or Nest would number the message itself; '' where the start is unknown, which is
    // what an EventSource holds before its first event anyway.
    let lastId = opened.startId ?? options.lastEventId?.toString() ?? '';
    let events = 0;
    let reason: CloseReason = 'client';
    const openedAt = Date.now();
    const buffer = new ListenerBuffer(req.res!, this.sse.bufferLimitBytes);
    const stream = {
      id: (req as Request & { id?: string }).id ?? requestIdOf(req),
      remoteAddress: req.ip,
      userId: options.userId ?? null,
    };
    this.connected++;
    this.logger.log(
      {
        stream: {
          ...stream,
          lastEventId: options.lastEventId?.toString() ?? null,
          startId: lastId,
        },
      },
      'stream opened',
    );

    // One map for everything merged: an event becomes its (shared) frame, the hand-over the
    // frame that ends the stream; the opening and keep-alives are frames already.
    const toFrame = (item: StoredNameEvent | Frame | typeof HANDOVER): Frame => {
      if (item === HANDOVER) {
        reason = 'shutdown';
        return { message: { id: lastId, retry: HANDOVER_RETRY_MS }, bytes: 0, last: true };
      }
      if ('message' in item) return item;
      lastId = item.id;
      events++;
      return frameOf(item);
    };
    const pacing: StreamPacing = {
      canTake: () => !buffer.backedUp(),
      ready: () => buffer.readyWithin(this.sse.replayStallMs),
      schedule: (read) => this.replayPages(read),
      sizeOf: (event) => frameOf(event).bytes,
      holdLimit: this.sse.bufferLimitBytes,
    };
    return merge(
      of<Frame>({ message: { id: lastId, retry: this.sse.retryMs }, bytes: 0 }),
      opened.events(pacing),
      this.signals[this.opened++ % HANDOVER_WAVES],
    ).pipe(
      map(toFrame),
      catchError((error: Error) => {
        if (error instanceof ListenerStalledError || error instanceof ListenerOverflowError) {
          buffer.cut();
          return EMPTY;
        }
        this.logger.warn(`Ending a stream: ${error.message}`);
        reason = error instanceof StorageUnavailableError ? 'storage' : 'bus';
        return EMPTY;
      }),
      buffer.deliver,
      finalize(() => {
        this.connected--;
        if (buffer.slow) {
          this.metrics.slowListenersCut.inc();
          this.logger.warn(
            `Disconnected a listener that stopped reading (more than ${this.sse.bufferLimitBytes} bytes unsent, or a replay untaken for ${this.sse.replayStallMs} ms)`,
          );
        }
        const durationMs = Date.now() - openedAt;
        const closed = { ...stream, durationMs, events, reason: buffer.slow ? 'slow' : reason };
        this.logger.log({ stream: closed }, 'stream closed');
      }),
    );
  }

  /**
   * A listener that reaches this instance while it stops (on a connection opened before):
   * told to come back at once, to another instance, keeping its place. An EventSource gives up
   * for good on an error status, so this is a stream too, not a 503.
   */
  private handedOver({ lastEventId }: ListenOptions): Observable<MessageEvent> {
    return of({ id: lastEventId?.toString() ?? '', retry: HANDOVER_RETRY_MS });
  }
}
