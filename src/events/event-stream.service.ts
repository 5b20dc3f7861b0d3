import {
  BeforeApplicationShutdown,
  Injectable,
  InternalServerErrorException,
  Logger,
  OnModuleDestroy,
  OnModuleInit,
  ServiceUnavailableException,
} from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { Request, Response } from 'express';
import { Observable, Subject } from 'rxjs';
import { BusReceiver, NameEventBus } from '../bus/name-event-bus.js';
import { withTimeout } from '../common/with-timeout.js';
import type { AppConfig } from '../config/configuration.js';
import { MetricsService } from '../metrics/metrics.service.js';
import {
  NameChangeEventRepository,
  type StoredNameEvent,
} from '../history/name-change-event.repository.js';
import { SseConnection } from './sse-connection.js';
import { eventFrame, KEEP_ALIVE_FRAME, openingFrame, SSE_HEADERS } from './sse-frames.js';

export const STREAM_SETUP_FAILED = 'Error establishing the event stream connection';

/** How long a new stream waits for its starting id before it opens without one. */
const START_ID_TIMEOUT_MS = 2_000;

export interface ListenOptions {
  userId?: string;
  /** Replay the stored events after this id first. */
  lastEventId?: bigint;
}

/**
 * The live stream. Events arrive once per instance from the bus, are framed once, and the
 * same bytes are written to every listener (or every listener of that user). The instance
 * is subscribed to the bus only while it has listeners.
 */
@Injectable()
export class EventStreamService
  implements OnModuleInit, OnModuleDestroy, BeforeApplicationShutdown
{
  private readonly logger = new Logger('EventStreamService');
  private readonly everyone = new Set<SseConnection>();
  private readonly byUser = new Map<string, Set<SseConnection>>();
  private readonly events = new Subject<StoredNameEvent>();
  private readonly sse: AppConfig['sse'];
  private attached?: Promise<void>;
  private keepAliveTimer?: NodeJS.Timeout;
  private closing = false;
  private count = 0;

  /** Every event this instance receives from the bus, once each. */
  readonly events$: Observable<StoredNameEvent> = this.events.asObservable();

  private readonly receiver: BusReceiver = {
    deliver: (event, publishedAt) => this.broadcast(event, publishedAt),
    interrupted: (reason) => this.interrupt(reason),
  };

  constructor(
    private readonly bus: NameEventBus,
    private readonly repository: NameChangeEventRepository,
    private readonly metrics: MetricsService,
    config: ConfigService<AppConfig, true>,
  ) {
    this.sse = config.get('sse', { infer: true });
    metrics.onCollect(() => metrics.listeners.set(this.count));
  }

  /** Listeners connected to this instance. */
  get listenerCount(): number {
    return this.count;
  }

  onModuleInit(): void {
    this.keepAliveTimer = setInterval(() => this.keepAlive(), this.sse.keepAliveMs);
    this.keepAliveTimer.unref();
  }

  /** Streams end before the HTTP server closes, or it would wait for them forever. */
  beforeApplicationShutdown(): void {
    this.closing = true;
    this.endAll();
  }

  onModuleDestroy(): void {
    clearInterval(this.keepAliveTimer);
  }

  /**
   * Opens a stream on `res`. Throws (before any byte is sent) a 503 when this instance is
   * full or stopping, and a 500 when the bus or the backlog cannot be read.
   */
  async open(req: Request, res: Response, options: ListenOptions): Promise<void> {
    // A client that left while its request was on the way here gets no 'close' event any
    // more: counted, it would stay a listener forever.
    if (res.destroyed) return;
    if (req.method === 'HEAD') {
      // The headers a stream would have, and no stream: a HEAD has no body to hold open.
      res.writeHead(200, SSE_HEADERS).end();
      return;
    }
    if (this.closing) throw new ServiceUnavailableException('The service is shutting down');
    if (this.count >= this.sse.maxListeners) {
      throw new ServiceUnavailableException('Too many listeners on this instance');
    }
    const connection = new SseConnection(res, options.userId, this.sse.bufferLimitBytes, (c) =>
      this.onSlowListener(c),
    );
    this.add(connection);
    res.once('close', () => this.remove(connection));

    let backlog: StoredNameEvent[] = [];
    let startId: string | undefined;
    try {
      await this.attach();
      if (options.lastEventId !== undefined) {
        backlog = await this.repository.findAfterId(options.lastEventId.toString(), {
          userId: options.userId,
          limit: this.sse.replayLimit,
        });
      } else {
        // Read after subscribing: anything stored later arrives live. Best effort: without
        // the database (down, or hung) the stream still opens, only without its starting id.
        startId = await withTimeout(this.repository.latestPublishedId(), START_ID_TIMEOUT_MS).catch(
          () => undefined,
        );
        // Every event up to that id has been published; once those still on their way here
        // have arrived, they go out right behind the id. A client that leaves after reading
        // the id and resumes from it has missed nothing.
        if (startId !== undefined) await this.bus.flush();
      }
    } catch (error) {
      this.remove(connection);
      throw new InternalServerErrorException(STREAM_SETUP_FAILED, { cause: error });
    }
    if (res.destroyed) return;
    if (connection.isClosed) {
      // Ended while being set up: the bus connection dropped, or the service is stopping.
      this.remove(connection);
      if (this.closing) throw new ServiceUnavailableException('The service is shutting down');
      throw new InternalServerErrorException(STREAM_SETUP_FAILED);
    }

    req.socket.setNoDelay(true);
    req.socket.setKeepAlive(true);
    req.socket.setTimeout(0);
    connection.start(SSE_HEADERS);
    connection.write(openingFrame(this.sse.retryMs, startId));
    await connection.replay(backlog.map(eventFrame));
    this.metrics.eventsReplayed.inc(backlog.length);
    connection.goLive(
      options.lastEventId,
      backlog.length > 0
        ? { first: BigInt(backlog[0].id), last: BigInt(backlog.at(-1)!.id) }
        : undefined,
    );
  }

  private broadcast(event: StoredNameEvent, publishedAt: number): void {
    this.events.next(event);
    const id = BigInt(event.id);
    const frame = eventFrame(event);
    for (const connection of this.everyone) connection.send(id, frame);
    const subscribers = this.byUser.get(event.userId);
    if (subscribers) for (const connection of subscribers) connection.send(id, frame);
    this.metrics.publishToWrite.observe(Math.max(0, Date.now() - publishedAt) / 1000);
  }

  private keepAlive(): void {
    for (const connection of this.everyone)
      if (connection.isLive) connection.write(KEEP_ALIVE_FRAME);
    for (const subscribers of this.byUser.values()) {
      for (const connection of subscribers)
        if (connection.isLive) connection.write(KEEP_ALIVE_FRAME);
    }
  }

  private attach(): Promise<void> {
    this.attached ??= this.bus.attach(this.receiver).catch((error: unknown) => {
      this.attached = undefined;
      throw error;
    });
    return this.attached;
  }

  private add(connection: SseConnection): void {
    this.count++;
    if (connection.userId === undefined) {
      this.everyone.add(connection);
      return;
    }
    let subscribers = this.byUser.get(connection.userId);
    if (!subscribers) this.byUser.set(connection.userId, (subscribers = new Set()));
    subscribers.add(connection);
  }

  private remove(connection: SseConnection): void {
    const removed =
      connection.userId === undefined
        ? this.everyone.delete(connection)
        : this.removeFromUser(connection, connection.userId);
    if (!removed) return;
    this.count--;
    if (this.count === 0 && this.attached) {
      this.attached = undefined;
      void this.bus.detach();
    }
  }

  private removeFromUser(connection: SseConnection, userId: string): boolean {
    const subscribers = this.byUser.get(userId);
    if (!subscribers?.delete(connection)) return false;
    if (subscribers.size === 0) this.byUser.delete(userId);
    return true;
  }

  /** Live delivery broke: end every stream so clients reconnect and replay what they missed. */
  private interrupt(reason: Error): void {
    this.logger.warn(`Ending ${this.count} stream(s): ${reason.message}`);
    this.attached = undefined;
    this.endAll();
  }

  private endAll(): void {
    for (const connection of [...this.everyone]) connection.end();
    for (const subscribers of [...this.byUser.values()]) {
      for (const connection of [...subscribers]) connection.end();
    }
  }

  private onSlowListener(connection: SseConnection): void {
    this.metrics.slowListenersCut.inc();
    this.logger.warn(
      `Disconnected a listener that stopped reading (more than ${this.sse.bufferLimitBytes} bytes unsent)`,
    );
    this.remove(connection);
  }
}
