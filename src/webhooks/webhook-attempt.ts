import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
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

/** Keep-alive connections of one sender (one endpoint), closed when it stops. */
export class SenderAgents {
  readonly http = new http.Agent({ keepAlive: true, maxSockets: 1 });
  readonly https = new https.Agent({ keepAlive: true, maxSockets: 1 });

  destroy(): void {
    this.http.destroy();
    this.https.destroy();
  }
}

/**
 * One POST of `request` to `url`, connecting only to `addresses` (vetted: the name is not
 * resolved again), following no redirect, answered within ANSWER_TIMEOUT_MS, its body read
 * up to ANSWER_BODY_LIMIT. Cut short when `signal` aborts (an error). Never rejects.
 */
export function attemptDelivery(
  url: URL,
  addresses: readonly ResolvedAddress[],
  format: WebhookFormat,
  request: WebhookRequest,
  agents: SenderAgents,
  signal: AbortSignal,
): Promise<AttemptOutcome> {
  const lookup: LookupFunction = (_host, options, callback) => {
    if (options.all)
      callback(
        null,
        addresses.map(({ address, family }) => ({ address, family })),
      );
    else callback(null, addresses[0].address, addresses[0].family);
  };
  const secure = url.protocol === 'https:';
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: AttemptOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
    };
    const body = Buffer.from(request.body);
    const req = (secure ? https : http).request(url, {
      method: 'POST',
      agent: secure ? agents.https : agents.http,
      lookup,
      signal,
      headers: {
        'content-type': 'application/json',
        'content-length': String(body.length),
        'user-agent': 'name-history-service-webhooks',
        ...request.headers,
      },
    });
    const timer = setTimeout(() => {
      settle({ kind: 'timeout' });
      req.destroy();
    }, ANSWER_TIMEOUT_MS);
    req.on('error', (error) => settle({ kind: 'error', message: error.message }));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const answered = () => {
        const status = res.statusCode ?? 0;
        const text = Buffer.concat(chunks).toString('utf8');
        const fromBody =
          format === 'discord' && status === 429 ? parseDiscordRetryAfter(text) : undefined;
        const retryAfterMs =
          fromBody ?? parseRetryAfter(res.headers['retry-after'] ?? undefined, Date.now());
        settle({ kind: 'answered', status, retryAfterMs });
      };
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        chunks.push(chunk);
        size += chunk.length;
        if (size >= ANSWER_BODY_LIMIT) {
          // Enough to know what it said: the rest is not read, and the connection is closed.
          answered();
          res.destroy();
        }
      });
      res.on('end', answered);
      res.on('error', (error) => settle({ kind: 'error', message: error.message }));
    });
    req.end(body);
  });
}
