import type { IncomingHttpHeaders } from 'node:http';
import type { LookupFunction } from 'node:net';
import { Client, type Dispatcher } from 'undici';
import { parseDiscordRetryAfter, parseRetryAfter } from './webhook-backoff.js';
import type { WebhookFormat } from './webhook-endpoint.entity.js';
import type { WebhookRequest } from './webhook-payloads.js';
import type { ResolvedAddress } from './webhook-targets.js';

/** No whole answer within this long after sending: the attempt fails, the connection closes. */
export const ANSWER_TIMEOUT_MS = 10_000;
/** The answer's body is read up to this much (Discord's retry_after is in it); the rest is cut. */
export const ANSWER_BODY_LIMIT = 64 * 1024;

/**
 * What an attempt came to, as the metrics count it (`stale`: not sent, what it was to send may
 * have been erased), with the receiver's own wait when it gave one.
 */
export interface AttemptOutcome {
  kind: 'delivered' | 'rejected' | 'gone' | 'timeout' | 'error' | 'refused' | 'stale';
  retryAfterMs?: number;
}

/**
 * The keep-alive connection of one sender (one endpoint), closed when it stops: an undici
 * Client for the endpoint's origin (its URL never changes) that connects only to the addresses
 * last vetted (it never resolves the name itself) and follows no redirect.
 */
export class SenderConnection {
  private client?: Client;
  private addresses: readonly ResolvedAddress[] = [];
  private readonly lookup: LookupFunction = (_host, options, callback) => {
    if (options.all) callback(null, [...this.addresses]);
    else callback(null, this.addresses[0].address, this.addresses[0].family);
  };

  /** The client for `url`, connecting (when it must) to one of `addresses`. */
  to(url: URL, addresses: readonly ResolvedAddress[]): Client {
    this.addresses = addresses;
    this.client ??= new Client(url.origin, { pipelining: 1, connect: { lookup: this.lookup } });
    return this.client;
  }

  destroy(): void {
    this.client?.destroy().catch(() => undefined);
    this.client = undefined;
  }
}

/**
 * One POST of `request` to `url`, connecting only to `addresses` (vetted: the name is not
 * resolved again), following no redirect, answered within ANSWER_TIMEOUT_MS (else the
 * connection is closed), its body read up to ANSWER_BODY_LIMIT. `current` is asked at the
 * moment the request is about to be written, after whatever the event loop read meanwhile
 * (undici writes on a reused connection only after yielding a turn): when it says no, the
 * request is not written and the outcome is `stale`. Cut short when `signal` aborts (an
 * error). Never rejects.
 */
export function attemptDelivery(
  url: URL,
  addresses: readonly ResolvedAddress[],
  format: WebhookFormat,
  request: WebhookRequest,
  connection: SenderConnection,
  signal: AbortSignal,
  current: () => boolean,
): Promise<AttemptOutcome> {
  return new Promise((resolve) => {
    const answer = new Answer(format, current, connection, (outcome) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
      resolve(outcome);
    });
    const stop = () => answer.cut('error');
    const timer = setTimeout(() => answer.cut('timeout'), ANSWER_TIMEOUT_MS);
    signal.addEventListener('abort', stop, { once: true });
    connection.to(url, addresses).dispatch(
      {
        origin: url.origin,
        method: 'POST',
        path: url.pathname + url.search,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'name-history-service-webhooks',
          ...request.headers,
        },
        body: request.body,
      },
      answer,
    );
  });
}

/** How an attempt was cut short: out of date (not written), not answered in time, stopped. */
type Cut = 'stale' | 'timeout' | 'error';

/**
 * What comes back for one attempt, as undici hands it over: the status, `Retry-After`, and
 * the body's first ANSWER_BODY_LIMIT bytes. Settles with the attempt's outcome (the first one
 * given is the promise's: any after it change nothing).
 */
class Answer implements Dispatcher.DispatchHandler {
  private controller?: Dispatcher.DispatchController;
  private status?: number;
  private retryAfter?: string;
  private readonly chunks: Buffer[] = [];
  private size = 0;
  /** How the attempt was cut short, if it was: what the error that follows stands for. */
  private cutAs?: Cut;

  constructor(
    private readonly format: WebhookFormat,
    private readonly current: () => boolean,
    private readonly connection: SenderConnection,
    private readonly settle: (outcome: AttemptOutcome) => void,
  ) {}

  /** Ends the attempt; before undici started it (still connecting), by closing the connection. */
  cut(kind: Cut): void {
    this.cutAs = kind;
    if (this.controller) this.controller.abort(new Error(`The attempt was cut short: ${kind}`));
    else this.connection.destroy();
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (!this.current()) this.cut('stale');
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    status: number,
    headers: IncomingHttpHeaders,
  ): void {
    this.status = status;
    const header = headers['retry-after'];
    this.retryAfter = typeof header === 'string' ? header : header?.[0];
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    if (this.size < ANSWER_BODY_LIMIT) return;
    // The body's limit reached: answered with what was read; the rest is not read, the
    // connection is closed.
    this.onResponseEnd();
    controller.abort(new Error('The answer was cut at its limit'));
  }

  onResponseEnd(): void {
    const status = this.status!;
    const text = Buffer.concat(this.chunks).toString('utf8');
    const fromBody =
      this.format === 'discord' && status === 429 ? parseDiscordRetryAfter(text) : undefined;
    const retryAfterMs = fromBody ?? parseRetryAfter(this.retryAfter, Date.now());
    const kind = status >= 200 && status < 300 ? 'delivered' : status === 410 ? 'gone' : 'rejected';
    this.settle({ kind, retryAfterMs });
  }

  onResponseError(): void {
    this.settle({ kind: this.cutAs ?? 'error' });
  }
}
