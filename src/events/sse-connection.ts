import type { Response } from 'express';
import type { Socket } from 'node:net';
import type { Frame } from './sse-frames.js';

/** What frames are written to: the socket itself, or (rarely) the response. */
interface Sink {
  write(bytes: Buffer): boolean;
  readonly writableLength: number;
  on(event: 'drain' | 'close', listener: () => void): unknown;
  off(event: 'drain' | 'close', listener: () => void): unknown;
}

/**
 * One listener. Once its headers are out, frames are written straight to its socket as
 * ready-made HTTP chunks (the same bytes for every listener), which costs about half of
 * what `response.write()` does per listener. A listener whose unsent bytes pass the bound is
 * cut off, so it never slows the others or holds memory without limit (it reconnects with
 * Last-Event-ID and catches up from the database).
 */
export class SseConnection {
  /** Until the backlog is written, live events wait here (then those already replayed are dropped). */
  private pending: { id: bigint; frame: Frame }[] | undefined = [];
  /**
   * The ids the replay covered. An event is stored before it is broadcast, so the backlog
   * can hold an event whose broadcast arrives only after the replay: it is not sent twice.
   */
  private replayed?: { first: bigint; last: bigint };
  private pendingBytes = 0;
  private closed = false;
  private sink?: Sink;
  private chunked = false;

  constructor(
    readonly response: Response,
    readonly userId: string | undefined,
    private readonly bufferLimit: number,
    private readonly onOverflow: (connection: SseConnection) => void,
  ) {}

  get isLive(): boolean {
    return this.pending === undefined && !this.closed;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Sends the headers, and chooses where the frames go from now on. */
  start(headers: Record<string, string>): void {
    this.response.writeHead(200, headers);
    this.response.flushHeaders();
    const socket = this.response.socket as (Socket & { _httpMessage?: unknown }) | null;
    // Writing past the response is only sound while it is the socket's current message
    // (not queued behind a pipelined one) and its body is chunked as usual.
    if (socket && socket._httpMessage === this.response && this.response.chunkedEncoding) {
      this.sink = socket;
      this.chunked = true;
    } else {
      this.sink = this.response;
    }
  }

  /** Sends a live event, or holds it while the backlog is being read. */
  send(id: bigint, frame: Frame): void {
    if (this.closed) return;
    if (this.replayed && id >= this.replayed.first && id <= this.replayed.last) return;
    if (this.pending) {
      this.pending.push({ id, frame });
      this.pendingBytes += frame.bytes.length;
      if (this.pendingBytes > this.bufferLimit) this.overflow();
      return;
    }
    this.write(frame);
  }

  write(frame: Frame): void {
    if (this.closed || !this.sink) return;
    this.sink.write(this.chunked ? frame.chunk : frame.bytes);
    if (this.sink.writableLength > this.bufferLimit) this.overflow();
  }

  /**
   * Writes the replayed backlog, waiting whenever the socket has all it can take: catching up
   * on a backlog larger than the bound is not a slow listener. Live events meanwhile wait in
   * `pending`, which is bounded.
   */
  async replay(frames: Frame[]): Promise<void> {
    for (const frame of frames) {
      if (this.closed || this.response.destroyed || !this.sink) return;
      if (!this.sink.write(this.chunked ? frame.chunk : frame.bytes)) await drained(this.sink);
    }
  }

  /**
   * The backlog (`replayed`, ids first to last, if any) is out: send what arrived meanwhile,
   * minus what the client already has (ids up to its Last-Event-ID, or to the backlog's
   * last), and from now on skip the ids the backlog covered.
   */
  goLive(lastEventId: bigint | undefined, replayed?: { first: bigint; last: bigint }): void {
    this.replayed = replayed;
    const lastSentId = replayed?.last ?? lastEventId;
    const pending = this.pending ?? [];
    this.pending = undefined;
    this.pendingBytes = 0;
    for (const { id, frame } of pending) {
      if (lastSentId === undefined || id > lastSentId) this.write(frame);
    }
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    // A stream still being set up has sent nothing yet: open() answers it with an error.
    if (this.response.headersSent) this.response.end();
  }

  private overflow(): void {
    if (this.closed) return;
    this.closed = true;
    this.onOverflow(this);
    this.response.destroy();
  }
}

function drained(sink: Sink): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      sink.off('drain', done);
      sink.off('close', done);
      resolve();
    };
    sink.on('drain', done);
    sink.on('close', done);
  });
}
