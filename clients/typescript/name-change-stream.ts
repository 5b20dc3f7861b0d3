/**
 * The live stream of name changes (`GET /api/webhooks/prevnames/listen`) for TypeScript
 * clients, typed with what openapi-typescript generates from openapi/openapi.json into
 * ./openapi.ts (`npm run generate:client`). Copy this file beside your own generated types.
 *
 *   const stream = await NameChangeStream.open('http://localhost:3000', { userId: '123' });
 *   for await (const { id, event } of stream) console.log(id, event.type, event.name);
 *
 * An EventSource reads the stream (the `eventsource` package, which is the browser's API for
 * Node): it hands over each message as it arrives and reconnects by itself with
 * `Last-Event-ID`, so no event is missed or repeated across reconnects. A request function
 * generated for the operation would instead wait for the end of the body, which never comes.
 */
import { EventSource, type FetchLike } from 'eventsource';
import type { components, paths } from './openapi.js';

export type NameChangeEvent = components['schemas']['NameChangeEvent'];
export type ErrorResponse = components['schemas']['ErrorResponseDto'];
/** `userId`: one user's events only; `lastEventId`: resume after this id (replay, then live). */
export type ListenQuery = NonNullable<
  paths['/api/webhooks/prevnames/listen']['get']['parameters']['query']
>;

export const LISTEN_PATH = '/api/webhooks/prevnames/listen';

/** One event of the stream: its id (keep the last one to resume from) and the event. */
export interface ReceivedNameChange {
  id: string;
  event: NameChangeEvent;
}

/** The service refused the stream (a 400, 500 or 503): its status and `{message, code}` body. */
export class NameChangeStreamRefused extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorResponse | undefined,
  ) {
    super(body?.message ?? `The stream was refused with status ${status}`);
    this.name = 'NameChangeStreamRefused';
  }
}

export class NameChangeStream implements AsyncIterableIterator<ReceivedNameChange> {
  private readonly received: ReceivedNameChange[] = [];
  private failure?: Error;
  private closed = false;
  private wake?: () => void;
  private last: string;

  private constructor(
    private readonly source: EventSource,
    lastEventId: string,
  ) {
    this.last = lastEventId;
  }

  /**
   * Opens the stream; resolves once the service has answered with the stream, so every event
   * stored from then on reaches it. Rejects when that first connection fails (refused by the
   * service, or no service at all); later drops are reconnected by the EventSource.
   */
  static open(baseUrl: string, query: ListenQuery = {}): Promise<NameChangeStream> {
    const url = new URL(LISTEN_PATH, baseUrl);
    for (const [key, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(key, value);
    }
    let refusal: ErrorResponse | undefined;
    // A refusal's body is `{message, code}`, short and complete: read it to say why.
    const fetchKeepingRefusals: FetchLike = async (input, init) => {
      const response = await fetch(input, init);
      if (response.status !== 200) {
        refusal = (await response.json().catch(() => undefined)) as ErrorResponse | undefined;
      }
      return response;
    };
    const source = new EventSource(url, { fetch: fetchKeepingRefusals });
    const stream = new NameChangeStream(source, query.lastEventId ?? '');
    return new Promise((resolve, reject) => {
      let opened = false;
      source.onopen = () => {
        opened = true;
        resolve(stream);
      };
      source.onerror = (error) => {
        const failure =
          error.code === undefined
            ? new Error(`Cannot open ${url.href}: ${error.message ?? 'network error'}`)
            : new NameChangeStreamRefused(error.code, refusal);
        if (!opened) {
          source.close();
          reject(failure);
        } else if (source.readyState === EventSource.CLOSED) {
          // Refused on a reconnection: the EventSource gives up, and so does the iteration.
          stream.end(failure);
        }
      };
      source.onmessage = ({ lastEventId, data }) => {
        stream.last = lastEventId;
        stream.push({ id: lastEventId, event: JSON.parse(data as string) as NameChangeEvent });
      };
    });
  }

  /** The id of the last event received (or the one resumed from): `lastEventId` to resume. */
  get lastEventId(): string {
    return this.last;
  }

  /** Closes the connection; an iteration in progress ends. */
  close(): void {
    this.end();
  }

  async next(): Promise<IteratorResult<ReceivedNameChange, undefined>> {
    while (this.received.length === 0 && !this.closed) {
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
    const value = this.received.shift();
    if (value) return { value, done: false };
    if (this.failure) throw this.failure;
    return { value: undefined, done: true };
  }

  /** Leaving a `for await` loop closes the stream. */
  return(): Promise<IteratorResult<ReceivedNameChange, undefined>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private push(received: ReceivedNameChange): void {
    this.received.push(received);
    this.wake?.();
  }

  private end(failure?: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.failure = failure;
    this.source.close();
    this.wake?.();
  }
}
