import { Observable, type Subscriber } from 'rxjs';
import type { BusSubscription } from '../bus/name-event-bus.js';
import type { StoredNameEvent } from './name-event.types.js';

/** Where a new stream starts, and what it replays. */
export interface StreamStart {
  /** The id the client resumes from (its Last-Event-ID), when it resumes. */
  lastEventId?: bigint;
  /** The stored events after `lastEventId`, oldest first. */
  backlog: StoredNameEvent[];
}

/**
 * One listener's events: the replayed backlog, then the live events, with no gap and no
 * duplicate at the switch.
 *
 * The bus subscription is taken before the backlog (or the starting id) is read, so every
 * event stored after that read arrives live; live events are collected from then on, and
 * handed over, minus those the client already has, once the stream is subscribed. An event
 * is stored before it is broadcast, so the backlog can hold an event whose broadcast arrives
 * only later: the ids the backlog covered are never sent again.
 */
export class NameEventStream {
  private held: StoredNameEvent[] | undefined = [];
  private failure?: Error;
  private closed = false;
  private subscriber?: Subscriber<StoredNameEvent>;
  private readonly upstream;
  private replayed?: { first: bigint; last: bigint };
  private lastSentId?: bigint;

  constructor(
    private readonly bus: BusSubscription,
    private readonly userId: string | undefined,
  ) {
    this.upstream = bus.deliveries$.subscribe({
      next: ({ event }) => this.receive(event),
      error: (error: Error) => this.fail(error),
    });
  }

  /**
   * The events, once the start is known. Subscribe once; unsubscribing (or the bus failing)
   * releases the bus subscription. `pace`, asked before each replayed event, may return a
   * promise to wait on: a large backlog then goes out as fast as the client reads it.
   */
  events(
    start: StreamStart,
    pace: () => Promise<void> | undefined = () => undefined,
  ): Observable<StoredNameEvent> {
    const { backlog, lastEventId } = start;
    this.replayed =
      backlog.length > 0
        ? { first: BigInt(backlog[0].id), last: BigInt(backlog.at(-1)!.id) }
        : undefined;
    this.lastSentId = this.replayed?.last ?? lastEventId;
    // Held by the Observable only until it is subscribed: a stream lives for hours, its
    // backlog (up to SSE_REPLAY_LIMIT events) must not.
    let pending: StoredNameEvent[] | undefined = backlog;
    return new Observable<StoredNameEvent>((subscriber) => {
      const replay = pending ?? [];
      pending = undefined;
      void this.replay(replay, pace, subscriber);
      return () => this.close();
    });
  }

  private async replay(
    backlog: StoredNameEvent[],
    pace: () => Promise<void> | undefined,
    subscriber: Subscriber<StoredNameEvent>,
  ): Promise<void> {
    for (const event of backlog) {
      const wait = pace();
      if (wait) await wait;
      if (subscriber.closed) return;
      subscriber.next(event);
    }
    const held = this.held ?? [];
    this.held = undefined;
    // Those that arrived meanwhile, minus what the client has (up to its Last-Event-ID, or
    // to the backlog's last).
    for (const event of held) {
      if (this.lastSentId === undefined || BigInt(event.id) > this.lastSentId) {
        subscriber.next(event);
      }
    }
    if (this.failure) subscriber.error(this.failure);
    else this.subscriber = subscriber;
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
    if (this.held) {
      this.held.push(event);
      return;
    }
    if (this.replayed) {
      const id = BigInt(event.id);
      if (id >= this.replayed.first && id <= this.replayed.last) return;
    }
    this.subscriber?.next(event);
  }

  private fail(error: Error): void {
    this.failure = error;
    this.subscriber?.error(error);
  }
}
