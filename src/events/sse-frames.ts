import type { StoredNameEvent } from '../history/name-change-event.repository.js';

export const SSE_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache',
  Connection: 'keep-alive',
  'X-Accel-Buffering': 'no',
} as const;

const CRLF = Buffer.from('\r\n');

/**
 * The bytes of one SSE message, encoded once and written as they are to every listener:
 * `bytes` as such, and `chunk` as one HTTP/1.1 chunk, for the (usual) responses that are
 * chunked and whose sockets are written to directly.
 */
export class Frame {
  private chunkBytes?: Buffer;

  constructor(readonly bytes: Buffer) {}

  get chunk(): Buffer {
    this.chunkBytes ??= Buffer.concat([
      Buffer.from(`${this.bytes.length.toString(16)}\r\n`),
      this.bytes,
      CRLF,
    ]);
    return this.chunkBytes;
  }
}

export const KEEP_ALIVE_FRAME = new Frame(Buffer.from(': keep-alive\n\n'));

/**
 * The opening message: the reconnect delay, and where this client's stream starts (`id:`
 * with no data dispatches nothing, but sets the id a browser sends back as Last-Event-ID),
 * so a client that loses the connection before its first event still resumes without a gap.
 */
export function openingFrame(retryMs: number, startId: string | undefined): Frame {
  return new Frame(
    Buffer.from(
      startId === undefined ? `retry: ${retryMs}\n\n` : `retry: ${retryMs}\nid: ${startId}\n\n`,
    ),
  );
}

/**
 * One SSE message: `id:` the stored id, one `data:` line with exactly the four fields.
 * JSON escapes CR and LF inside strings, so no name can break the framing.
 */
export function eventFrame(event: StoredNameEvent): Frame {
  const data = JSON.stringify({
    userId: event.userId,
    type: event.type,
    name: event.name,
    changedAt: event.changedAt,
  });
  return new Frame(Buffer.from(`id: ${event.id}\ndata: ${data}\n\n`));
}
