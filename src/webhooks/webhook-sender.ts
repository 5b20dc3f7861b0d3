import { Logger } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';
import { attemptDelivery, SenderAgents, type AttemptOutcome } from './webhook-attempt.js';
import { retryDelayMs } from './webhook-backoff.js';
import type { NextDelivery, WebhookDeliveriesRepository } from './webhook-deliveries.repository.js';
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

/**
 * The deliveries of one endpoint, while this instance holds its lease: the oldest queued
 * event, attempted until it gets a 2xx (then dequeued), retried with back-off otherwise,
 * then the next one: in id order, one at a time. Ends when `signal` aborts (the lease lost,
 * the endpoint deleted here, shutdown) or the endpoint is found deleted.
 */
export async function runSender(
  endpointId: string,
  deps: SenderDeps,
  wake: SenderWake,
  signal: AbortSignal,
): Promise<void> {
  const logger = new Logger('Webhooks');
  const agents = new SenderAgents();
  let failures = 0;
  try {
    while (!signal.aborted) {
      wake.look();
      let next: NextDelivery | undefined;
      try {
        next = await deps.deliveries.next(endpointId);
      } catch (error) {
        logger.warn(`Endpoint ${endpointId}: ${(error as Error).message}`);
        await pause(deps.pollMs, signal);
        continue;
      }
      if (!next) return;
      if (next.gone || !next.event || signal.aborted) {
        await wake.wait(deps.pollMs, signal);
        continue;
      }
      const at = new Date();
      const outcome = await attempt(next, at, deps, agents, signal);
      const kind = outcomeOf(outcome);
      // Cut short (the lease lost, the endpoint deleted, shutdown): whoever sends next tries again.
      if (signal.aborted && kind !== 'delivered') return;
      deps.attempted(kind);
      try {
        if (kind === 'delivered') {
          failures = 0;
          await deps.deliveries.delivered(endpointId, next.event.id);
          continue;
        }
        await deps.deliveries.failed(endpointId, at, kind === 'gone');
      } catch (error) {
        logger.warn(`Endpoint ${endpointId}: ${(error as Error).message}`);
      }
      if (kind === 'gone') continue;
      failures += 1;
      const retryAfterMs = outcome.kind === 'answered' ? outcome.retryAfterMs : undefined;
      await pause(retryDelayMs(failures, retryAfterMs), signal);
    }
  } finally {
    agents.destroy();
  }
}

async function attempt(
  next: NextDelivery,
  at: Date,
  deps: SenderDeps,
  agents: SenderAgents,
  signal: AbortSignal,
): Promise<AttemptOutcome | { kind: 'refused' }> {
  const url = new URL(next.url);
  try {
    const addresses = await vetTarget(url, deps.allowPrivateTargets, deps.resolve);
    const request = webhookRequest(next.format, next.event!, next.secret, at);
    return await attemptDelivery(url, addresses, next.format, request, agents, signal);
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
