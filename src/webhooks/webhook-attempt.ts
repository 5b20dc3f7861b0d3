import type { LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import { Client } from 'undici';
import { parseDiscordRetryAfter, parseRetryAfter } from './webhook-backoff.js';
import type { WebhookFormat } from './webhook-endpoint.entity.js';
import type { WebhookRequest } from './webhook-payloads.js';
import type { ResolvedAddress } from './webhook-targets.js';

/** No whole answer within this long after sending: the attempt fails, the connection closes. */
export const ANSWER_TIMEOUT_MS = 10_000;
/** The answer's body is read up to this much (Discord's retry_after is in it); the rest is cut. */
export const ANSWER_BODY_LIMIT = 64 * 1024;

/** What an attempt came to. */
export type AttemptOutcome =
  | { kind: 'answered'; status: number; retryAfterMs?: number }
  | { kind: 'timeout' }
  | { kind: 'error'; message: string };

/**
 * The keep-alive connection of one sender (one endpoint), closed when it stops: an undici
 * Client for the endpoint's origin that connects only to the addresses last vetted (it never
 * resolves the name itself) and follows no redirect.
 */
export class SenderConnection {
  private client?: Client;
  private origin?: string;
  private addresses: readonly ResolvedAddress[] = [];
  private readonly lookup: LookupFunction = (_host, options, callback) => {
    if (options.all)
      callback(
        null,
        this.addresses.map(({ address, family }) => ({ address, family })),
      );
    else callback(null, this.addresses[0].address, this.addresses[0].family);
  };

  /** The client for `url`, connecting (when it must) to one of `addresses`. */
  to(url: URL, addresses: readonly ResolvedAddress[]): Client {
    this.addresses = addresses;
    if (this.client === undefined || this.origin !== url.origin) {
      this.destroy();
      this.origin = url.origin;
      this.client = new Client(url.origin, { pipelining: 1, connect: { lookup: this.lookup } });
    }
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
 * connection is closed), its body read up to ANSWER_BODY_LIMIT. Cut short when `signal`
 * aborts (an error). Never rejects.
 */
export async function attemptDelivery(
  url: URL,
  addresses: readonly ResolvedAddress[],
  format: WebhookFormat,
  request: WebhookRequest,
  connection: SenderConnection,
  signal: AbortSignal,
): Promise<AttemptOutcome> {
  const abort = new AbortController();
  const cut = () => abort.abort();
  const timer = setTimeout(cut, ANSWER_TIMEOUT_MS);
  signal.addEventListener('abort', cut, { once: true });
  try {
    const res = await connection.to(url, addresses).request({
      method: 'POST',
      path: url.pathname + url.search,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'name-history-service-webhooks',
        ...request.headers,
      },
      body: request.body,
      signal: abort.signal,
    });
    const text = await readUpTo(res.body, ANSWER_BODY_LIMIT);
    const status = res.statusCode;
    const fromBody =
      format === 'discord' && status === 429 ? parseDiscordRetryAfter(text) : undefined;
    const header = res.headers['retry-after'];
    const retryAfterMs =
      fromBody ?? parseRetryAfter(Array.isArray(header) ? header[0] : header, Date.now());
    return { kind: 'answered', status, retryAfterMs };
  } catch (error) {
    if (abort.signal.aborted && !signal.aborted) return { kind: 'timeout' };
    return { kind: 'error', message: (error as Error).message };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', cut);
  }
}

/**
 * The body's first `limit` bytes, as text; past them the rest is not read, and the
 * connection is closed.
 */
async function readUpTo(body: Readable, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= limit) break;
  }
  return Buffer.concat(chunks).toString('utf8');
}
