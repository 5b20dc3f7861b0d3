import {
  BeforeApplicationShutdown,
  Injectable,
  InternalServerErrorException,
  Logger,
  MessageEvent,
  ServiceUnavailableException,
} from '@nestjs/common';
import type { Request } from 'express';
import { EMPTY, Observable, of } from 'rxjs';
import { requestIdOf } from '../common/logger.js';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { NameEventStreams, type OpenedStream } from '../name-events/name-event-streams.service.js';
import type { StoredNameEvent } from '../name-events/name-event.types.js';
import { sseConfig } from './events.config.js';
import { SseListener, type CloseReason, type Frame } from './sse-listener.js';

export const STREAM_SETUP_FAILED = 'Error establishing the event stream connection';
export const TOO_MANY_LISTENERS_MESSAGE = 'Too many listeners on this instance';

/** At shutdown, streams end in waves over this window, so their clients do not all reconnect at once. */
const HANDOVER_WINDOW_MS = 500;
const HANDOVER_WAVES = 10;
/** The `retry:` of a stream ended at shutdown: reconnect (to another instance) at once. */
const HANDOVER_RETRY_MS = 100;

const KEEP_ALIVE: Frame = { message: Object.freeze({ comment: 'keep-alive' }), bytes: 14 };

export interface ListenOptions {
  userId?: string;
  /** Replay the stored events after this id first. */
  lastEventId?: bigint;
}

/**
 * The live stream, as Observables for Nest's `@Sse()`. Each listener's Observable is the
 * opening (`retry:`, and where its stream starts), its replay and live events from the
 * name-event domain, and keep-alive comments. An event is turned into its message once per
 * instance: every listener is handed the same frozen object.
 */
@Injectable()
export class EventStreamService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('EventStream');
  private readonly listeners = new Set<SseListener>();
  private readonly frames = new WeakMap<StoredNameEvent, Frame>();
  /** One timer per instance, running while anyone listens. */
  private keepAliveTimer?: NodeJS.Timeout;
  /** Streams being set up: they count against the cap already. */
  private opening = 0;
  private closing = false;

  constructor(
    private readonly nameEvents: NameEventStreams,
    private readonly metrics: MetricsService,
    @InjectConfig(sseConfig) private readonly sse: ConfigOf<typeof sseConfig>,
  ) {
    metrics.onCollect(() => metrics.listeners.set(this.listeners.size));
  }

  /** Listeners connected to this instance, or being set up. */
  get listenerCount(): number {
    return this.listeners.size + this.opening;
  }

  /**
   * Sets a stream up: rejects (before any byte is sent) with a 503 when this instance is
   * full, and a 500 when live delivery or the backlog cannot be set up; while the instance
   * stops, the stream only tells the client to come back (see `handedOver`). `signal` is the
   * request's: aborted when the client leaves, even during setup.
   */
  async open(
    req: Request,
    options: ListenOptions,
    signal: AbortSignal,
  ): Promise<Observable<MessageEvent>> {
    if (this.closing) return this.handedOver(options);
    if (this.listenerCount >= this.sse.maxListeners) {
      throw new ServiceUnavailableException(TOO_MANY_LISTENERS_MESSAGE);
    }
    this.opening++;
    let reserved = true;
    const unreserve = () => {
      if (reserved) this.opening--;
      reserved = false;
    };
    let opened: OpenedStream;
    try {
      opened = await this.nameEvents.openStream({
        userId: options.userId,
        lastEventId: options.lastEventId,
        replayLimit: this.sse.replayLimit,
      });
    } catch (error) {
      unreserve();
      throw new InternalServerErrorException(STREAM_SETUP_FAILED, { cause: error });
    }
    // Nest never subscribes once the client has left: the stream is released either way.
    const abandon = () => {
      unreserve();
      opened.close();
    };
    if (signal.aborted) {
      abandon();
      return EMPTY;
    }
    signal.addEventListener('abort', abandon, { once: true });
    if (this.closing) {
      abandon();
      return this.handedOver(options);
    }
    // The id the client keeps: where its stream starts, or where it resumes from. Never
    // unset, or Nest would number the message itself; '' where the start is unknown, which is
    // what an EventSource holds before its first event anyway.
    const startId = opened.startId ?? options.lastEventId?.toString() ?? '';
    return new Observable<MessageEvent>((subscriber) => {
      unreserve();
      const listener = new SseListener(subscriber, req.socket, options.userId, startId);
      this.add(listener);
      const stream = {
        id: (req as Request & { id?: string }).id ?? requestIdOf(req),
        remoteAddress: req.ip,
        userId: options.userId ?? null,
      };
      this.logger.log(
        {
          stream: { ...stream, lastEventId: options.lastEventId?.toString() ?? null, startId },
        },
        'stream opened',
      );
      listener.send({ message: { id: startId, retry: this.sse.retryMs }, bytes: 0 });
      const bound = this.sse.bufferLimitBytes;
      const pace = () =>
        listener.queuedBytes >= bound / 2 ? listener.drainedBelow(bound / 2) : undefined;
      const events = opened.events(pace).subscribe({
        next: (event) => listener.sendEvent(event.id, this.frameOf(event)),
        error: (error: Error) => {
          this.logger.warn(`Ending a stream: ${error.message}`);
          listener.end('bus');
        },
      });
      return () => {
        events.unsubscribe();
        this.remove(listener);
        this.onClosed(listener, stream);
      };
    });
  }

  /**
   * Streams end before the HTTP server closes, or it would wait for them forever: in waves,
   * each with a short `retry:`, so their clients reconnect to another instance at once and
   * the others stay connected meanwhile.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    const listeners = [...this.listeners];
    if (listeners.length === 0) return;
    this.logger.log(`Handing ${listeners.length} stream(s) over to other instances`);
    const perWave = Math.ceil(listeners.length / HANDOVER_WAVES);
    for (let wave = 0; wave * perWave < listeners.length; wave++) {
      if (wave > 0) await delay(HANDOVER_WINDOW_MS / HANDOVER_WAVES);
      for (const listener of listeners.slice(wave * perWave, (wave + 1) * perWave)) {
        listener.end('shutdown', HANDOVER_RETRY_MS);
      }
    }
  }

  private add(listener: SseListener): void {
    this.listeners.add(listener);
    this.keepAliveTimer ??= setInterval(() => {
      for (const each of this.listeners) each.send(KEEP_ALIVE);
    }, this.sse.keepAliveMs);
  }

  private remove(listener: SseListener): void {
    this.listeners.delete(listener);
    if (this.listeners.size > 0) return;
    clearInterval(this.keepAliveTimer);
    this.keepAliveTimer = undefined;
  }

  private frameOf(event: StoredNameEvent): Frame {
    let frame = this.frames.get(event);
    if (!frame) {
      const data = JSON.stringify({
        userId: event.userId,
        type: event.type,
        name: event.name,
        changedAt: event.changedAt,
      });
      frame = {
        message: Object.freeze({ id: event.id, data }),
        // `id: <id>\ndata: <data>\n\n`
        bytes: event.id.length + Buffer.byteLength(data) + 12,
      };
      this.frames.set(event, frame);
    }
    return frame;
  }

  private onClosed(listener: SseListener, stream: Record<string, unknown>): void {
    const reason: CloseReason = listener.closed(this.sse.bufferLimitBytes);
    if (reason === 'slow') {
      this.metrics.slowListenersCut.inc();
      this.logger.warn(
        `Disconnected a listener that stopped reading (more than ${this.sse.bufferLimitBytes} bytes unsent)`,
      );
    }
    this.logger.log(
      {
        stream: {
          ...stream,
          durationMs: Date.now() - listener.openedAt,
          events: listener.events,
          reason,
        },
      },
      'stream closed',
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

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
