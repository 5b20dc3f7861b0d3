import type { MessageEvent } from '@nestjs/common';
import type { Writable } from 'node:stream';
import { Observable, type OperatorFunction } from 'rxjs';
import Queue from 'yocto-queue';
import { withTimeout } from '../common/with-timeout.js';

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

/**
 * The one bound on what waits for a listener (SSE_BUFFER_LIMIT_BYTES), in bytes as they go on
 * the wire. Messages go straight on to Nest's `@Sse()` writer while the response takes writes;
 * while it is backed up (the client is not reading) they wait here, and go on when it drains.
 * More than `limitBytes` waiting: the listener is cut (its connection dropped; it can
 * reconnect and replay).
 */
export class ListenerBuffer {
  private readonly waiting = new Queue<Frame>();
  private waitingBytes = 0;
  private watchingDrain = false;
  private readonly drained = new Set<() => void>();
  /** Hands a frame to Nest: set while the stream is subscribed. */
  private give?: (frame: Frame) => void;
  /** Set once the listener was cut for not reading. */
  slow = false;

  constructor(
    private readonly response: Writable,
    private readonly limitBytes: number,
  ) {}

  /** Frames in, messages out to Nest, at the pace the response takes them. */
  readonly deliver: OperatorFunction<Frame, MessageEvent> = (frames) =>
    new Observable<MessageEvent>((subscriber) => {
      this.give = (frame) => {
        subscriber.next(frame.message);
        if (frame.last) subscriber.complete();
      };
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
      this.drained.add(resolve);
      this.watchDrain();
    });
  }

  /** As `ready()`, but rejects with a ListenerStalledError once the listener took nothing for `ms`. */
  readyWithin(ms: number): Promise<void> {
    const wait = this.ready();
    if (!wait) return Promise.resolve();
    return withTimeout(wait, ms, () => new ListenerStalledError('The listener took nothing'));
  }

  /** Cuts the listener off for not reading (its connection dropped; it can resume). */
  cut(): void {
    this.slow = true;
    this.response.destroy();
  }

  /** Whether frames wait here, or the response is backed up. */
  backedUp(): boolean {
    return this.waitingBytes > 0 || this.response.writableNeedDrain;
  }

  private accept(frame: Frame): void {
    if (!this.give) return;
    if (!this.backedUp()) {
      this.give(frame);
      return;
    }
    if (frame.last) {
      // Stopping: a client that is not reading would hold its response open until it reads
      // everything queued for it. Dropped instead; it resumes from its last id.
      this.response.destroy();
      return;
    }
    this.waiting.enqueue(frame);
    this.waitingBytes += frame.bytes;
    if (this.waitingBytes > this.limitBytes) this.cut();
    else this.watchDrain();
  }

  /** One 'drain' listener at a time: on it, everything waiting goes on to Nest, in order. */
  private watchDrain(): void {
    if (this.watchingDrain) return;
    this.watchingDrain = true;
    this.response.once('drain', () => {
      this.watchingDrain = false;
      for (let frame = this.waiting.dequeue(); frame && this.give; frame = this.waiting.dequeue()) {
        this.waitingBytes -= frame.bytes;
        this.give(frame);
      }
      this.wakeWaiters();
    });
  }

  private wakeWaiters(): void {
    const waiters = [...this.drained];
    this.drained.clear();
    for (const resolve of waiters) resolve();
  }
}
