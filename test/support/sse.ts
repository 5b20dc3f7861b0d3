import http from 'node:http';
import { assertDocumented } from './openapi-contract.js';

export interface SseMessage {
  id?: string;
  data?: string;
  retry?: string;
  comments: string[];
}

/**
 * A raw SSE reader over node:http: keeps every byte received, and parses messages the way
 * the EventSource spec does (blank line ends a message; lines starting with ':' are comments).
 */
export class SseStream {
  raw = '';
  messages: SseMessage[] = [];
  ended = false;
  private buffer = '';
  private waiters: (() => void)[] = [];

  private constructor(
    readonly url: string,
    readonly status: number,
    readonly headers: http.IncomingHttpHeaders,
    private readonly request: http.ClientRequest,
    readonly response: http.IncomingMessage,
  ) {
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => this.onData(chunk));
    response.on('close', () => {
      this.ended = true;
      this.notify();
    });
  }

  /** Opens the stream; resolves once the status line and headers arrive. */
  static open(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
    return new Promise((resolve, reject) => {
      const request = http.get(url, { headers: { Accept: 'text/event-stream', ...headers } });
      request.once('response', (response) => {
        const stream = new SseStream(
          url,
          response.statusCode ?? 0,
          response.headers,
          request,
          response,
        );
        if (stream.status === 200) {
          assertDocumented({
            method: 'GET',
            url,
            status: 200,
            contentType: response.headers['content-type'] ?? null,
            body: undefined,
          });
        }
        resolve(stream);
      });
      request.once('error', reject);
    });
  }

  /** The user the stream is filtered to (`?userId=`), if any. */
  get userFilter(): string | undefined {
    return new URL(this.url).searchParams.get('userId') ?? undefined;
  }

  /** The events (messages with data), as `{id, data}` parsed from JSON. */
  get events(): { id: string | undefined; data: unknown }[] {
    return this.messages
      .filter((m) => m.data !== undefined)
      .map((m) => ({ id: m.id, data: JSON.parse(m.data!) as unknown }));
  }

  /** Resolves when `predicate` holds, or rejects after `timeoutMs`. */
  async until(predicate: (stream: SseStream) => boolean, timeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this)) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        throw new Error(`SSE condition not met within ${timeoutMs} ms; received:\n${this.raw}`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  untilEvents(count: number, timeoutMs?: number): Promise<void> {
    return this.until((s) => s.events.length >= count, timeoutMs);
  }

  /** Reads the whole body of a non-stream answer (an error), checked against the document. */
  async body(): Promise<string> {
    await this.until((s) => s.ended);
    assertDocumented({
      method: 'GET',
      url: this.url,
      status: this.status,
      contentType: this.headers['content-type'] ?? null,
      body: JSON.parse(this.raw) as unknown,
    });
    return this.raw;
  }

  close(): void {
    this.request.destroy();
  }

  private onData(chunk: string): void {
    this.raw += chunk;
    this.buffer += chunk;
    let end: number;
    while ((end = this.buffer.indexOf('\n\n')) !== -1) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      const message: SseMessage = { comments: [] };
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) message.comments.push(line.slice(1).trim());
        else {
          const colon = line.indexOf(':');
          const field = line.slice(0, colon);
          const value = line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id' || field === 'data' || field === 'retry') message[field] = value;
        }
      }
      this.messages.push(message);
    }
    this.notify();
  }

  private notify(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

/**
 * A stream's opening, as Nest writes it: a blank line (written with the headers), then one
 * message without data: `id:` where the client's stream starts (or resumes from) and `retry:`.
 */
export function opening(id: string | number, retryMs = 3000): string {
  return `\nid: ${id}\nretry: ${retryMs}\n\n`;
}

/** Nest's Cache-Control for a stream (the contract asks for one that contains no-cache). */
export const STREAM_CACHE_CONTROL =
  'private, no-cache, no-store, must-revalidate, max-age=0, no-transform';

/** The data of a stream's events, each checked to come with a greater id than the one before. */
export function dataInIdOrder(stream: SseStream): unknown[] {
  const ids = stream.events.map((e) => BigInt(e.id!));
  for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThan(ids[i - 1]);
  return stream.events.map((e) => e.data);
}

/** One event as a stream carries it. */
export function frame(id: string, data: unknown): string {
  return `id: ${id}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * Opens streams that are closed after each test of the describe block it is called in
 * (and at the end of the block).
 */
export function streamsClosedAfterEach(): (
  url: string,
  headers?: Record<string, string>,
) => Promise<SseStream> {
  const open: SseStream[] = [];
  const closeAll = () => {
    for (const stream of open.splice(0)) stream.close();
  };
  afterEach(closeAll);
  afterAll(closeAll);
  return async (url, headers) => {
    const stream = await SseStream.open(url, headers);
    open.push(stream);
    return stream;
  };
}
