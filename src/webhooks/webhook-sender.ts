import { Logger } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';
import { attemptDelivery, SenderAgents, type AttemptOutcome } from './webhook-attempt.js';
import { retryDelayMs } from './webhook-backoff.js';
import type { StoredNameEvent } from '../name-events/name-event.types.js';
import type {
  SenderEndpoint,
  WebhookDeliveriesRepository,
} from './webhook-deliveries.repository.js';
import { webhookRequest } from './webhook-payloads.js';
import { TargetRefusedError, vetTarget, type Resolve } from './webhook-targets.js';

/** How an attempt ended, as the metrics count it. */
export type DeliveryOutcome = 'delivered' | 'rejected' | 'gone' | 'timeout' | 'error' | 'refused';

export interface SenderDeps {
  deliveries: WebhookDeliveriesRepository;
  allowPrivateTargets: boolean;
  pollMs: number;
  resolve?: Resolve;
  attempted(outcome: DeliveryOutcome): void;
}

/** "Deliveries may have been queued": a sender that found none waits for this, or the poll. */
export class SenderWake {
  private woken = false;
  private waiting?: () => void;

  notify(): void {
    this.woken = true;
    this.waiting?.();
  }

  /** Before a look: what is queued from now on wakes the next `wait`. */
  look(): void {
    this.woken = false;
  }

  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.woken || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.waiting = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.waiting = done;
    });
  }
}

/** Queued events read at once: the first is sent at once, each next one after a check. */
const BATCH = 100;

/**
 * The deliveries of one endpoint, while this instance holds its lease: the oldest queued
 * event, attempted until it gets a 2xx, retried with back-off otherwise, then the next one:
 * in id order, one at a time. Events are read a batch at a time; before each attempt but the
 * first of a batch, one statement records the previous 2xx and checks the endpoint and the
 * event are still there (a DELETE, a 410 or an erasure since the read stops it). Ends when
 * `signal` aborts (the lease lost, the endpoint deleted here, shutdown) or the endpoint is
 * found deleted.
 */
export async function runSender(
  endpointId: string,
  deps: SenderDeps,
  wake: SenderWake,
  signal: AbortSignal,
): Promise<void> {
  const logger = new Logger('Webhooks');
  const agents = new SenderAgents();
  let endpoint: SenderEndpoint | undefined;
  let batch: StoredNameEvent[] = [];
  /** Got its 2xx, not recorded yet: the next statement records it. */
  let delivered: string | null = null;
  /** The batch's first event was just read: no check before its first attempt. */
  let fresh = false;
  let failures = 0;
  try {
    while (!signal.aborted) {
      try {
        if (batch.length === 0) {
          wake.look();
          const next = await deps.deliveries.next(endpointId, delivered, BATCH);
          delivered = null;
          if (!next) return;
          ({ endpoint, events: batch } = next);
          if (endpoint.gone) batch = [];
          fresh = true;
          if (batch.length === 0) await wake.wait(deps.pollMs, signal);
          continue;
        }
        if (!fresh) {
          const queued = await deps.deliveries.stillQueued(endpointId, delivered, batch[0].id);
          delivered = null;
          if (queued === undefined) return;
          if (!queued) {
            batch = [];
            continue;
          }
        }
      } catch (error) {
        logger.warn(`Endpoint ${endpointId}: ${(error as Error).message}`);
        await pause(deps.pollMs, signal);
        continue;
      }
      fresh = false;
      const event = batch[0];
      const at = new Date();
      const outcome = await attempt(endpoint!, event, at, deps, agents, signal);
      const kind = outcomeOf(outcome);
      // Cut short (the lease lost, the endpoint deleted, shutdown): whoever sends next tries again.
      if (signal.aborted && kind !== 'delivered') return;
      deps.attempted(kind);
      if (kind === 'delivered') {
        failures = 0;
        delivered = event.id;
        batch.shift();
        continue;
      }
      await deps.deliveries
        .failed(endpointId, at, kind === 'gone')
        .catch((error: Error) => logger.warn(`Endpoint ${endpointId}: ${error.message}`));
      if (kind === 'gone') {
        batch = [];
        continue;
      }
      failures += 1;
      const retryAfterMs = outcome.kind === 'answered' ? outcome.retryAfterMs : undefined;
      await pause(retryDelayMs(failures, retryAfterMs), signal);
    }
  } finally {
    agents.destroy();
    if (delivered !== null) {
      await deps.deliveries
        .delivered(endpointId, delivered)
        .catch((error: Error) => logger.warn(`Endpoint ${endpointId}: ${error.message}`));
    }
  }
}

async function attempt(
  endpoint: SenderEndpoint,
  event: StoredNameEvent,
  at: Date,
  deps: SenderDeps,
  agents: SenderAgents,
  signal: AbortSignal,
): Promise<AttemptOutcome | { kind: 'refused' }> {
  const url = new URL(endpoint.url);
  try {
    const addresses = await vetTarget(url, deps.allowPrivateTargets, deps.resolve);
    const request = webhookRequest(endpoint.format, event, endpoint.secret, at);
    return await attemptDelivery(url, addresses, endpoint.format, request, agents, signal);
  } catch (error) {
    if (error instanceof TargetRefusedError) return { kind: 'refused' };
    return { kind: 'error', message: (error as Error).message };
  }
}

function outcomeOf(outcome: AttemptOutcome | { kind: 'refused' }): DeliveryOutcome {
  if (outcome.kind !== 'answered') return outcome.kind;
  if (outcome.status >= 200 && outcome.status < 300) return 'delivered';
  return outcome.status === 410 ? 'gone' : 'rejected';
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch(() => undefined);
}
