import { Logger } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';
import type { WebhookAcks } from './webhook-acks.js';
import { retryDelayMs } from './webhook-backoff.js';
import type { StoredNameEvent } from '../name-events/name-event.types.js';
import type {
  DeliveredUpTo,
  SenderEndpoint,
  WebhookDeliveriesRepository,
} from './webhook-deliveries.repository.js';
import type { RunOutcome } from './webhook-delivery-protocol.js';
import type { WebhookDeliveryThread } from './webhook-delivery-thread.js';

/** How an attempt ended, as the metrics count it. */
export type DeliveryOutcome = 'delivered' | 'rejected' | 'gone' | 'timeout' | 'error' | 'refused';

export interface SenderDeps {
  deliveries: WebhookDeliveriesRepository;
  acks: WebhookAcks;
  thread: WebhookDeliveryThread;
  allowPrivateTargets: boolean;
  pollMs: number;
  attempted(outcome: DeliveryOutcome): void;
  /** WebhookQueueWatch.stamp: what was read is trusted while it is unchanged. */
  stamp(): number | undefined;
}

/** "Events may have been read": a sender that found none waits for this, or the poll. */
export class SenderWake {
  private woken = false;
  private waiting?: () => void;

  notify(): void {
    this.woken = true;
    this.waiting?.();
  }

  /** Before a look: what is read from now on wakes the next `wait`. */
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

/** Events read at once. */
const BATCH = 100;

/**
 * The deliveries of one endpoint, while this instance holds its lease: the oldest undelivered
 * event, attempted until it gets a 2xx, retried with back-off otherwise, then the next one:
 * in id order, one at a time. Events are read a batch at a time, and the read is trusted
 * until WebhookQueueWatch's stamp changes (an erasure, a deletion of the endpoint, anywhere):
 * then the batch is read again. The attempts run on the delivery thread (WebhookDeliveryThread),
 * which sends the batch's events one after the other and looks at the stamp once more as each
 * request is about to be written (attemptDelivery's `current`). While nothing
 * watches (no stamp), one statement before each attempt but the first of a batch checks the
 * endpoint and the event are still there. 2xx are recorded by WebhookAcks; a failure at
 * once, and the batch is read again before the retry. Ends when `signal` aborts (the lease
 * lost, the endpoint deleted here, shutdown) or the endpoint is found deleted.
 */
export async function runSender(
  endpointId: string,
  deps: SenderDeps,
  wake: SenderWake,
  signal: AbortSignal,
): Promise<void> {
  const logger = new Logger('Webhooks');
  const warn = (message: string) => logger.warn(message);
  const { acks } = deps;
  let endpoint: SenderEndpoint | undefined;
  let batch: StoredNameEvent[] = [];
  /** Once the batch is delivered, every matching event up to this id is. */
  let through = '0';
  /** The watch's stamp when the batch was read (undefined: nothing watches). */
  let readAt: number | undefined;
  /** batch[0] was checked (just read, or checked since): no statement before its attempt. */
  let checked = false;
  let failures = 0;
  try {
    while (!signal.aborted) {
      let delivered: DeliveredUpTo | null = null;
      try {
        if (batch.length > 0 && readAt !== undefined && readAt !== deps.stamp()) batch = [];
        if (batch.length === 0) {
          wake.look();
          readAt = deps.stamp();
          delivered = await acks.take(endpointId);
          const next = await deps.deliveries.next(endpointId, delivered, BATCH);
          if (!next) return;
          ({ endpoint, events: batch, through } = next);
          if (endpoint.gone) batch = [];
          checked = true;
          if (batch.length > 0) continue;
          // Read past events not its own: the next read starts after them.
          if (!endpoint.gone && through !== next.deliveredThrough) {
            acks.delivered(endpointId, { eventId: null, through });
          }
          await wake.wait(deps.pollMs, signal);
          continue;
        }
        if (!checked && readAt === undefined) {
          delivered = await acks.take(endpointId);
          const queued = await deps.deliveries.stillToSend(endpointId, delivered, batch[0].id);
          if (queued === undefined) return;
          if (!queued) {
            batch = [];
            continue;
          }
        }
      } catch (error) {
        acks.untake(endpointId, delivered);
        warn(`Endpoint ${endpointId}: ${(error as Error).message}`);
        await pause(deps.pollMs, signal);
        continue;
      }
      checked = false;
      // Nothing watches: one event at a time, each checked first (above).
      const events = readAt === undefined ? batch.slice(0, 1) : batch;
      const { outcome, at } = await deps.thread.deliver(
        endpointId,
        endpoint!,
        events,
        { readAt, allowPrivateTargets: deps.allowPrivateTargets, signal },
        (eventId) => {
          failures = 0;
          deps.attempted('delivered');
          acks.delivered(endpointId, { eventId, through: batch.length === 1 ? through : eventId });
          batch.shift();
        },
      );
      if (outcome === null) continue;
      if (outcome.kind === 'stale') {
        batch = [];
        continue;
      }
      const kind = outcomeOf(outcome);
      // Cut short (the lease lost, the endpoint deleted, shutdown): whoever sends next tries again.
      if (signal.aborted) return;
      deps.attempted(kind);
      const unrecorded = await acks.take(endpointId);
      await deps.deliveries
        .failed(endpointId, unrecorded, at, kind === 'gone')
        .catch((error: Error) => {
          acks.untake(endpointId, unrecorded);
          warn(`Endpoint ${endpointId}: ${error.message}`);
        });
      // Read again before the retry: what failed may have been erased meanwhile.
      batch = [];
      if (kind === 'gone') continue;
      failures += 1;
      const retryAfterMs = outcome.kind === 'answered' ? outcome.retryAfterMs : undefined;
      await pause(retryDelayMs(failures, retryAfterMs), signal);
    }
  } finally {
    deps.thread.close(endpointId);
    await acks.flush(endpointId);
  }
}

function outcomeOf(outcome: Exclude<RunOutcome, { kind: 'stale' }>): DeliveryOutcome {
  if (outcome.kind !== 'answered') return outcome.kind;
  if (outcome.status >= 200 && outcome.status < 300) return 'delivered';
  return outcome.status === 410 ? 'gone' : 'rejected';
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch(() => undefined);
}
