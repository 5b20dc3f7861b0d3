import { Observable, type Subscriber } from 'rxjs';
import type { BusSubscription } from '../bus/index.js';
import type { StoredNameEvent } from './name-event.types.js';

/** The stored events a resume replays: ids `first` to `last`, both included. */
export interface ReplayWindow {
  first: bigint;
  last: bigint;
  /** Reads the next page of the window: at most a page of events after `afterId`, oldest first. */
  readPage(afterId: bigint): Promise<StoredNameEvent[]>;
  /** Told of each replayed event as it goes to the listener. */
  sent?(): void;
}

/** How the listener's side paces a stream (see NameEventStream.events). */
export interface StreamPacing {
  /** Whether the listener can take more now: asked before each replayed event. */
  canTake(): boolean;
  /**
   * Resolves once the listener can take more, or rejects (which ends the stream with that
   * error): asked when it could not.
   */
  ready(): Promise<void>;
  /** Runs one page read of the replay: where the instance bounds how many run at once. */
  schedule(read: () => Promise<void>): Promise<void>;
  /** The size a live event counts for while it is held during the replay. */
  sizeOf(event: StoredNameEvent): number;
  /** Held live events may count this much at most; past it the stream ends (ListenerOverflowError). */
  holdLimit: number;
}

/** The live events that arrived during a replay outgrew the listener's bound. */
export class ListenerOverflowError extends Error {
  override readonly name = 'ListenerOverflowError';
}

const UNPACED: StreamPacing = {
  canTake: () => true,
  ready: () => Promise.resolve(),
  schedule: (read) => read(),
  sizeOf: () => 0,
  holdLimit: Infinity,
};

/**
 * One listener's events: the replayed backlog, then the live events, with no gap and no
 * duplicate at the switch.
 *
 * The bus subscription is taken before the replay window (or the starting id) is read, so
 * every event stored after that read arrives live; live events are held from then on, and
 * handed over, minus those the client already has, once the replay is done. An event is
 * stored before it is broadcast, so the window can hold an event whose broadcast arrives
 * only later: the ids the window covers are never sent again.
 *
 * The replay is read a page at a time, as the listener takes it: a page is read only once the
 * listener can take more, and what it could not take at once is let go and read again later.
 * So a listener that does not read holds no more than the page it is given, whatever the
 * window's size.
 */
export class NameEventStream {
  private held: StoredNameEvent[] | undefined = [];
  private heldSize = 0;
  private failure?: Error;
  private closed = false;
  private subscriber?: Subscriber<StoredNameEvent>;
  private pacing = UNPACED;
  private readonly upstream;
  /** The id the client resumes from (its Last-Event-ID), when it resumes. */
  private lastEventId?: bigint;
  /** The stored events it replays first, when there are any. */
  private replayWindow?: ReplayWindow;
  /**
   * Where a new stream starts: the newest id whose broadcast is done (unset when resuming, or
   * when the database could not say in time).
   */
  startId?: string;

  constructor(
    private readonly bus: BusSubscription,
    private readonly userId: string | undefined,
  ) {
    this.upstream = bus.deliveries$.subscribe({
      next: (event) => this.receive(event),
      error: (error: Error) => this.fail(error),
    });
  }

  /** Makes it a resume after the client's `lastEventId`, replaying `replay` first. */
  resume(lastEventId: bigint, replay?: ReplayWindow): void {
    this.lastEventId = lastEventId;
    this.replayWindow = replay;
  }

  /**
   * The events, once the start is known. Subscribe once; unsubscribing (or the bus failing)
   * releases the bus subscription.
   */
  events(pacing: StreamPacing = UNPACED): Observable<StoredNameEvent> {
    const replay = this.replayWindow;
    this.pacing = pacing;
    return new Observable<StoredNameEvent>((subscriber) => {
      void this.start(subscriber, replay, replay?.last ?? this.lastEventId);
      return () => this.close();
    });
  }

  private async start(
    subscriber: Subscriber<StoredNameEvent>,
    replay: ReplayWindow | undefined,
    lastSentId: bigint | undefined,
  ): Promise<void> {
    try {
      if (replay) await this.replay(replay, subscriber);
    } catch (error) {
      subscriber.error(error);
      return;
    }
    if (subscriber.closed) return;
    const held = this.held ?? [];
    this.held = undefined;
    // Those that arrived meanwhile, minus what the client has (up to its Last-Event-ID, or
    // to the window's last).
    for (const event of held) {
      if (lastSentId === undefined || BigInt(event.id) > lastSentId) subscriber.next(event);
    }
    if (this.failure) subscriber.error(this.failure);
    else this.subscriber = subscriber;
  }

  /** The window, a page at a time, each read once the listener can take more. */
  private async replay(replay: ReplayWindow, subscriber: Subscriber<StoredNameEvent>) {
    let position = replay.first - 1n;
    while (position < replay.last && !subscriber.closed && !this.failure) {
      if (!this.pacing.canTake()) await this.pacing.ready();
      if (this.failure) return;
      let done = false;
      await this.pacing.schedule(async () => {
        if (subscriber.closed) return;
        const page = await replay.readPage(position);
        done = page.length === 0;
        for (const [index, event] of page.entries()) {
          // The first of a page always goes, so every read makes progress; the rest only
          // while the listener takes them, and the others are read again next time.
          if (subscriber.closed || (index > 0 && !this.pacing.canTake())) break;
          subscriber.next(event);
          replay.sent?.();
          position = BigInt(event.id);
        }
      });
      if (done) return;
    }
  }

  /** Live delivery broke before the stream was subscribed. */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  /** Ends it, subscribed or not (setup failed, or the client left during setup). Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.subscriber = undefined;
    this.held = undefined;
    this.upstream.unsubscribe();
    this.bus.release();
  }

  private receive(event: StoredNameEvent): void {
    if (this.userId !== undefined && event.userId !== this.userId) return;
    if (this.replayWindow) {
      const id = BigInt(event.id);
      if (id >= this.replayWindow.first && id <= this.replayWindow.last) return;
    }
    if (this.held) {
      this.heldSize += this.pacing.sizeOf(event);
      if (this.heldSize > this.pacing.holdLimit) {
        this.held = [];
        this.fail(new ListenerOverflowError('Live events outgrew the bound during the replay'));
        return;
      }
      this.held.push(event);
      return;
    }
    this.subscriber?.next(event);
  }

  private fail(error: Error): void {
    this.failure = error;
    this.subscriber?.error(error);
  }
}
