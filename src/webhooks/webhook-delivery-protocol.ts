import type { SharedStamp } from '../common/shared-stamp.js';
import type { StoredNameEvent } from '../name-events/name-event.types.js';
import type { AttemptOutcome } from './webhook-attempt.js';
import type { WebhookFormat } from './webhook-endpoint.entity.js';

/** What the delivery thread is started with. */
export interface DeliveryThreadData {
  /** WebhookQueueWatch's stamp. */
  queue: SharedStamp;
}

/**
 * A run: the events of one endpoint to attempt in order, each once its predecessor got a 2xx,
 * until one does not, the queue's stamp is no longer `readAt` (null: not looked at), or
 * `stopped[0]` is set.
 */
export interface DeliveryRun {
  type: 'run';
  runId: number;
  endpointId: string;
  url: string;
  format: WebhookFormat;
  secret: string | null;
  allowPrivateTargets: boolean;
  events: StoredNameEvent[];
  readAt: number | null;
  stopped: Int32Array;
}

/** To the thread: a run, a run's attempt to cut short, an endpoint's connection to close. */
export type ToDeliveryThread =
  DeliveryRun | { type: 'cut'; runId: number } | { type: 'close'; endpointId: string };

/** The attempt a run ended with (not a 2xx), or `refused`: the target failed the check. */
export type RunOutcome = AttemptOutcome | { kind: 'refused' };

/** From the thread: an event got its 2xx; a run ended (`outcome` null: every event got one). */
export type FromDeliveryThread =
  | { type: 'delivered'; runId: number; eventId: string }
  | { type: 'end'; runId: number; outcome: RunOutcome | null; at: number };
