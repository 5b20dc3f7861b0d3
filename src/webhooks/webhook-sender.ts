import { Logger } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';
import type { NameEventLogRepository, StoredNameEvent } from '../name-events/index.js';
import {
  attemptDelivery,
  SenderConnection,
  type AttemptOutcome,
  type DeliveryOutcome,
} from './webhook-attempt.js';
import { retryDelayMs } from './webhook-backoff.js';
import type { SenderEndpoint, WebhookEndpointsRepository } from './webhook-endpoints.repository.js';
import { webhookRequest } from './webhook-payloads.js';
import { TargetRefusedError, vetTarget } from './webhook-targets.js';

/** The name of the webhooks' consumer of the event log: senders read what it has handled. */
export const WEBHOOKS_CONSUMER = 'webhooks';

export interface SenderDeps {
  endpoints: WebhookEndpointsRepository;
  log: NameEventLogRepository;
  allowPrivateTargets: boolean;
  pollMs: number;
  attempted(outcome: DeliveryOutcome): void;
  /** Changes whenever events may have been removed (`events.removed`, on any instance). */
  removals(): number;
  /** Whether every instance's removals change `removals()` (see NameEventRemovalsService). */
  heardEverywhere(): boolean;
}

/** "Events may have been read": a sender that found none waits for this, or the poll. */
export class SenderWake {
  private woken = false;
  private waiting?: AbortController;

  notify(): void {
    this.woken = true;
    this.waiting?.abort();
  }

  /** Before a look: what is read from now on wakes the next `wait`. */
  look(): void {
    this.woken = false;
  }

  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.woken) return Promise.resolve();
    this.waiting = new AbortController();
    return pause(ms, AbortSignal.any([signal, this.waiting.signal]));
  }
}

/** Events read at once. */
const BATCH = 100;

/**
 * The deliveries of one endpoint, while this instance holds its lease: the oldest undelivered
 * event, attempted until it gets a 2xx, retried with back-off otherwise, then the next one:
 * in id order, one at a time, each result recorded before the next attempt. Events are read
 * a batch at a time from what the webhooks consumer has handled, and the batch is trusted
 * until events are removed anywhere (`removals()` changes): an attempt not yet written is
 * then dropped and the batch read again. While removals on other instances may go unheard,
 * it reads one event before each attempt instead. Ends when `signal` aborts (the lease lost,
 * the endpoint deleted here, shutdown) or the endpoint is found deleted.
 */
export async function runSender(
  endpointId: string,
  deps: SenderDeps,
  wake: SenderWake,
  signal: AbortSignal,
): Promise<void> {
  const logger = new Logger('Webhooks');
  const warn = (error: unknown) =>
    logger.warn(`Endpoint ${endpointId}: ${(error as Error).message}`);
  const connection = new SenderConnection();
  let failures = 0;
  try {
    while (!signal.aborted) {
      wake.look();
      const readAt = deps.removals();
      let endpoint: SenderEndpoint | undefined;
      let events: StoredNameEvent[];
      let through: string;
      try {
        endpoint = await deps.endpoints.findForSender(endpointId);
        if (!endpoint) return;
        if (endpoint.gone) {
          await wake.wait(deps.pollMs, signal);
          continue;
        }
        const limit = deps.heardEverywhere() ? BATCH : 1;
        ({ events, through } = await deps.log.findHandled(
          WEBHOOKS_CONSUMER,
          endpoint.deliveredThrough,
          endpoint,
          limit,
        ));
        if (events.length === 0) {
          // Read past events not its own: the next read starts after them.
          if (through !== endpoint.deliveredThrough) {
            await deps.endpoints.delivered(endpointId, null, through);
          }
          await wake.wait(deps.pollMs, signal);
          continue;
        }
      } catch (error) {
        warn(error);
        await pause(deps.pollMs, signal);
        continue;
      }
      const current = () => !signal.aborted && deps.removals() === readAt;
      for (const [i, event] of events.entries()) {
        const at = new Date();
        const outcome = await attempt(endpoint, event, at, deps, connection, signal, current);
        if (outcome.kind === 'stale') break;
        // Cut short (the lease lost, the endpoint deleted, shutdown): whoever sends next tries again.
        if (signal.aborted) return;
        const { kind } = outcome;
        deps.attempted(kind);
        if (kind === 'delivered') {
          failures = 0;
          const upTo = i === events.length - 1 ? through : event.id;
          const recorded = await deps.endpoints.delivered(endpointId, event.id, upTo).catch(warn);
          if (recorded === false) return;
          if (recorded === undefined) break;
          continue;
        }
        await deps.endpoints.failed(endpointId, at, kind === 'gone').catch(warn);
        if (kind !== 'gone') {
          failures += 1;
          await pause(retryDelayMs(failures, outcome.retryAfterMs), signal);
        }
        // Read again before the retry: what failed may have been erased meanwhile.
        break;
      }
    }
  } finally {
    connection.destroy();
  }
}

/**
 * The address check (`refused` when the target fails it), then the request, unless `current`
 * says no as it is about to be written.
 */
async function attempt(
  { url: target, format, secret }: SenderEndpoint,
  event: StoredNameEvent,
  at: Date,
  deps: SenderDeps,
  connection: SenderConnection,
  signal: AbortSignal,
  current: () => boolean,
): Promise<AttemptOutcome> {
  if (!current()) return { kind: 'stale' };
  const url = new URL(target);
  try {
    const addresses = await vetTarget(url, deps.allowPrivateTargets);
    const request = webhookRequest(format, event, secret, at);
    return await attemptDelivery(url, addresses, format, request, connection, signal, current);
  } catch (error) {
    return { kind: error instanceof TargetRefusedError ? 'refused' : 'error' };
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch(() => undefined);
}
