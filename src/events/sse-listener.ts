import type { MessageEvent } from '@nestjs/common';
import type { Socket } from 'node:net';
import type { Subscriber } from 'rxjs';

/** An SSE message, with the size of its frame on the wire (for the backpressure check). */
export interface Frame {
  readonly message: MessageEvent;
  readonly bytes: number;
}

/**
 * Why a stream ended, as its close log line says it: the client left, it stopped reading (cut,
 * and counted), the instance is stopping, or live delivery from Redis broke.
 */
export type CloseReason = 'client' | 'slow' | 'shutdown' | 'bus';

/**
 * One connected listener: where its messages go (Nest's SSE pipeline, through `subscriber`),
 * the id it has last been sent, and how far the socket is behind what it was given.
 *
 * Nest queues what a client does not read and drops the connection past the route's
 * `maxPendingDataLength`. What is queued in the process is what was handed to Nest and has
 * not reached the socket yet; `socket.bytesWritten` counts what has (including the socket's
 * own buffer), so the difference tells a replay when to wait, and a stream that ended with
 * more than the bound queued was cut for not reading.
 */
export class SseListener {
  readonly openedAt = Date.now();
  /** Events sent (replayed and live). */
  events = 0;
  private given = 0;
  private readonly writtenAtStart: number;
  private ended?: CloseReason;

  constructor(
    private readonly subscriber: Subscriber<MessageEvent>,
    private readonly socket: Socket,
    readonly userId: string | undefined,
    /** The id the client has (its start or Last-Event-ID), then the last one it was sent. */
    public lastId: string,
  ) {
    this.writtenAtStart = socket.bytesWritten;
  }

  /** Bytes handed to Nest that have not reached the socket yet. */
  get queuedBytes(): number {
    return this.given - (this.socket.bytesWritten - this.writtenAtStart);
  }

  get endReason(): CloseReason | undefined {
    return this.ended;
  }

  send(frame: Frame): void {
    if (this.ended) return;
    this.given += frame.bytes;
    holdWritesThisTurn(this.socket);
    this.subscriber.next(frame.message);
  }

  sendEvent(id: string, frame: Frame): void {
    this.lastId = id;
    this.events++;
    this.send(frame);
  }

  /**
   * Resolves once what is queued has fallen below `bytes`, or the stream has ended: after the
   * socket drains when it is backed up, else after Nest's next writes.
   */
  async drainedBelow(bytes: number): Promise<void> {
    while (!this.ended && !this.socket.destroyed && this.queuedBytes >= bytes) {
      if (!this.socket.writableNeedDrain) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        continue;
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          this.socket.off('drain', done);
          this.socket.off('close', done);
          resolve();
        };
        this.socket.once('drain', done);
        this.socket.once('close', done);
      });
    }
  }

  /**
   * Ends the stream from this side, with `retry:` (and its id, so the client keeps it) first.
   * A client that is not reading at that moment would hold its response open until it reads
   * everything queued for it: its connection is dropped instead (it resumes from its last id).
   */
  end(reason: CloseReason, retryMs?: number): void {
    if (this.ended) return;
    if (this.socket.writableNeedDrain) {
      this.ended = reason;
      this.socket.destroy();
      return;
    }
    if (retryMs !== undefined)
      this.send({ message: { id: this.lastId, retry: retryMs }, bytes: 0 });
    this.ended = reason;
    this.subscriber.complete();
  }

  /**
   * Records why the stream ended when it did not end from this side: Nest dropped it for not
   * reading (more than `bound` queued), or the client left.
   */
  closed(bound: number): CloseReason {
    this.ended ??= this.queuedBytes > bound ? 'slow' : 'client';
    return this.ended;
  }
}

/** Sockets held corked until the event loop's current turn ends. */
const held = new Set<Socket>();

/**
 * Holds `socket`'s writes until the current turn of the event loop ends, then lets them go as
 * one. Nest writes every message of a stream as its own chunk, each waiting for the one
 * before (a promise and a tick apart): without this, a batch of events published together
 * cost every listener a system call per event. Held with the socket's own cork, so the
 * bytes and their order are exactly Nest's; released for all sockets by one setImmediate.
 */
function holdWritesThisTurn(socket: Socket): void {
  if (held.has(socket)) return;
  if (held.size === 0) setImmediate(releaseHeld);
  held.add(socket);
  socket.cork();
}

function releaseHeld(): void {
  for (const socket of held) socket.uncork();
  held.clear();
}
