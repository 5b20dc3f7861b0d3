/**
 * The delivery thread (WebhookDeliveryThread starts it): runs of deliveries, each an
 * endpoint's events attempted in order, so that an endpoint gets its next event as soon as
 * its last 2xx is read, not a turn of the service's busy event loop later. The senders on the
 * main thread keep everything else: the lease, the reads, the records, the retries.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { stampOf } from '../common/shared-stamp.js';
import type { StoredNameEvent } from '../name-events/name-event.types.js';
import { attemptDelivery, SenderConnection } from './webhook-attempt.js';
import type {
  DeliveryRun,
  DeliveryThreadData,
  FromDeliveryThread,
  RunOutcome,
  ToDeliveryThread,
} from './webhook-delivery-protocol.js';
import { webhookRequest } from './webhook-payloads.js';
import { TargetRefusedError, vetTarget } from './webhook-targets.js';

const port = parentPort!;
const { queue } = workerData as DeliveryThreadData;
const connections = new Map<string, SenderConnection>();
const cuts = new Map<number, AbortController>();

const post = (message: FromDeliveryThread) => port.postMessage(message);

port.on('message', (message: ToDeliveryThread) => {
  switch (message.type) {
    case 'run':
      void run(message);
      break;
    case 'cut':
      cuts.get(message.runId)?.abort();
      break;
    case 'close':
      connections.get(message.endpointId)?.destroy();
      connections.delete(message.endpointId);
      break;
  }
});

async function run(message: DeliveryRun): Promise<void> {
  const { runId, endpointId, readAt, stopped } = message;
  const cut = new AbortController();
  cuts.set(runId, cut);
  let connection = connections.get(endpointId);
  if (!connection) connections.set(endpointId, (connection = new SenderConnection()));
  // Asked again as each request is about to be written.
  const current = () =>
    Atomics.load(stopped, 0) === 0 && (readAt === null || stampOf(queue) === readAt);
  let outcome: RunOutcome | null = null;
  let at = Date.now();
  try {
    for (const event of message.events) {
      at = Date.now();
      const attempt = await attemptOne(message, event, new Date(at), connection, cut, current);
      if (attempt.kind === 'answered' && attempt.status >= 200 && attempt.status < 300) {
        post({ type: 'delivered', runId, eventId: event.id });
        continue;
      }
      outcome = attempt;
      break;
    }
  } finally {
    cuts.delete(runId);
    post({ type: 'end', runId, outcome, at });
  }
}

async function attemptOne(
  { url: target, format, secret, allowPrivateTargets }: DeliveryRun,
  event: StoredNameEvent,
  at: Date,
  connection: SenderConnection,
  cut: AbortController,
  current: () => boolean,
): Promise<RunOutcome | { kind: 'answered'; status: number }> {
  if (!current()) return { kind: 'stale' };
  const url = new URL(target);
  try {
    const addresses = await vetTarget(url, allowPrivateTargets);
    const request = webhookRequest(format, event, secret, at);
    return await attemptDelivery(url, addresses, format, request, connection, cut.signal, current);
  } catch (error) {
    if (error instanceof TargetRefusedError) return { kind: 'refused' };
    return { kind: 'error', message: (error as Error).message };
  }
}
