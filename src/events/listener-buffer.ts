import type { MessageEvent } from '@nestjs/common';
import type { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import { Observable, type OperatorFunction } from 'rxjs';
import { Fifo } from '../common/fifo.js';
import type { TurnCork } from '../platform/turn-cork.js';

/** An SSE message, with the size of its frame on the wire. */
export interface Frame {
  readonly message: MessageEvent;
  readonly bytes: number;
  /** The stream's last message: it completes after it (the hand-over at shutdown). */
  readonly last?: boolean;
}

/** A listener took nothing for the time it was given (see ListenerBuffer.readyWithin). */
export class ListenerStalledError extends Error {
  override readonly name = 'ListenerStalledError';
}

/** Bytes handed to Nest at most in one turn of the event loop; the rest wait here. */
const BYTES_PER_TURN = 64 * 1024;

/** Counts the event loop's turns, with one `setImmediate` a turn, only while asked. */
export class TurnCounter {
  private turn = 0;
  private ticking = false;

  get current(): number {
    if (!this.ticking) {
      this.ticking = true;
      setImmediate(() => {
        this.turn++;
        this.ticking = false;
      });
    }
    return this.turn;
  }
}

/**
 * What waits for one listener, bounded by the service itself in bytes (SSE_BUFFER_LIMIT_BYTES).
 *
 * Messages go on to Nest's SSE writer while the response takes writes, up to BYTES_PER_TURN a
 * turn. While the response is backed up (the client is not reading) they wait here, counted
 * as they go on the wire, and go on as it drains. More than `limitBytes` waiting: the listener
 * is cut (its connection dropped; it can reconnect and replay). So Nest never holds more than
 * one turn's messages (its own `maxPendingDataLength`, counted in characters, is never
 * reached), and no listener holds more than its bound and one turn's messages.
 */
export class ListenerBuffer {
  private readonly waiting = new Fifo<Frame>();
  private waitingBytes = 0;
  private turn = -1;
  private givenThisTurn = 0;
  private releasing = false;
  private watchingDrain = false;
  private readonly drained = new Set<() => void>();
  /** Hands a frame to Nest: set while the stream is subscribed. */
  private give?: (frame: Frame) => void;
  /** Set once the listener was cut for not reading. */
  slow = false;

  constructor(
    /** The listener's response (its socket, when it has one, is held a turn at a time). */
    private readonly response: Writable & { readonly socket?: Socket | null },
    private readonly limitBytes: number,
    private readonly turns: TurnCounter,
    /** Holds the response's socket a turn at a time, so a turn's messages go out as one write. */
    private readonly cork: TurnCork,
  ) {}

  /** Frames in, messages out to Nest, at the pace the response takes them. */
  readonly deliver: OperatorFunction<Frame, MessageEvent> = (frames) =>
    new Observable<MessageEvent>((subscriber) => {
      const give = (frame: Frame): void => {
        this.givenThisTurn += frame.bytes;
        if (this.response.socket) this.cork.hold(this.response.socket);
        subscriber.next(frame.message);
        if (frame.last) subscriber.complete();
      };
      this.give = give;
      const subscription = frames.subscribe({
        next: (frame) => this.accept(frame),
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
      return () => {
        subscription.unsubscribe();
        this.give = undefined;
        this.waiting.clear();
        this.waitingBytes = 0;
        this.wakeWaiters();
      };
    });

  /**
   * Undefined when the listener can take more now: nothing waits here and its response is
   * not backed up. Else a promise that resolves once it can, or once the stream ended. A
   * replay asks before each event, so it goes out as fast as the client reads, and no faster.
   */
  ready(): Promise<void> | undefined {
    if (!this.give || !this.backedUp()) return undefined;
    return new Promise<void>((resolve) => {
      const check = () => {
        if (this.give && this.backedUp()) {
          this.watchDrain();
          return;
        }
        this.drained.delete(check);
        resolve();
      };
      this.drained.add(check);
      this.watchDrain();
    });
  }

  /** As `ready()`, but rejects with a ListenerStalledError once the listener took nothing for `ms`. */
  readyWithin(ms: number): Promise<void> {
    const wait = this.ready();
    if (!wait) return Promise.resolve();
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ListenerStalledError('The listener took nothing')), ms);
    });
    return Promise.race([wait, stalled]).finally(() => clearTimeout(timer));
  }

  /** Cuts the listener off for not reading (its connection dropped; it can resume). */
  cut(): void {
    this.slow = true;
    this.response.destroy();
  }

  /** While only the response is backed up (release() wakes the waiters otherwise). */
  private watchDrain(): void {
    if (this.watchingDrain || this.waitingBytes > 0) return;
    this.watchingDrain = true;
    this.response.once('drain', () => {
      this.watchingDrain = false;
      this.wakeWaiters();
    });
  }

  private accept(frame: Frame): void {
    if (!this.give) return;
    if (frame.last && this.backedUp()) {
      // Stopping: a client that is not reading would hold its response open until it reads
      // everything queued for it. Dropped instead; it resumes from its last id.
      this.response.destroy();
      return;
    }
    if (this.waitingBytes === 0 && this.mayGive(frame.bytes)) {
      this.give(frame);
      return;
    }
    this.waiting.push(frame);
    this.waitingBytes += frame.bytes;
    if (this.waitingBytes > this.limitBytes) {
      this.cut();
      return;
    }
    this.scheduleRelease();
  }

  /** Whether frames wait here, or the response is backed up. */
  backedUp(): boolean {
    return this.waitingBytes > 0 || this.response.writableNeedDrain;
  }

  private mayGive(bytes: number): boolean {
    if (this.response.writableNeedDrain) return false;
    const turn = this.turns.current;
    if (turn !== this.turn) {
      this.turn = turn;
      this.givenThisTurn = 0;
    }
    return this.givenThisTurn === 0 || this.givenThisTurn + bytes <= BYTES_PER_TURN;
  }

  private scheduleRelease(): void {
    if (this.releasing) return;
    this.releasing = true;
    const release = () => {
      this.releasing = false;
      this.release();
    };
    if (this.response.writableNeedDrain) this.response.once('drain', release);
    else setImmediate(release);
  }

  private release(): void {
    for (let frame = this.waiting.peek(); frame && this.give; frame = this.waiting.peek()) {
      if (!this.mayGive(frame.bytes)) break;
      this.waiting.shift();
      this.waitingBytes -= frame.bytes;
      this.give(frame);
    }
    if (this.waiting.length > 0 && this.give) this.scheduleRelease();
    this.wakeWaiters();
  }

  private wakeWaiters(): void {
    for (const check of [...this.drained]) check();
  }
}
