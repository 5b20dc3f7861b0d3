import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import type { StoredNameEvent } from '../name-events/name-event.types.js';
import type {
  DeliveryThreadData,
  FromDeliveryThread,
  RunOutcome,
  ToDeliveryThread,
} from './webhook-delivery-protocol.js';
import type { SenderEndpoint } from './webhook-deliveries.repository.js';
import { WebhookQueueWatch } from './webhook-queue-watch.js';

/**
 * Where the delivery thread's code is, asked when the thread starts: the compiled
 * webhook-delivery.worker.js beside this file (tests that run the TypeScript sources give
 * the build's).
 */
export const DELIVERY_WORKER_URL = Symbol('DELIVERY_WORKER_URL');
export type DeliveryWorkerUrl = () => URL;
export const deliveryWorkerUrl: DeliveryWorkerUrl = () =>
  new URL('./webhook-delivery.worker.js', import.meta.url);

/** How a run ended; `at`: when its last attempt was made. */
export interface RunEnd {
  outcome: RunOutcome | null;
  at: Date;
}

interface Pending {
  delivered: (eventId: string) => void;
  settle: (end: RunEnd) => void;
}

/**
 * The thread the senders' attempts run on (webhook-delivery.worker.ts), started with the
 * first run. An endpoint's deliveries are strictly one after the other, so on the service's
 * event loop, busy with the publish path, an endpoint got at most one event per turn: fewer
 * than were published under load, and its lag grew. On a thread of its own the next request
 * goes as soon as the 2xx is read. A thread that dies ends its runs with an error (retried as
 * any failed attempt) and the next run starts another.
 */
@Injectable()
export class WebhookDeliveryThread implements OnModuleDestroy {
  private readonly logger = new Logger('Webhooks');
  private worker?: Worker;
  private nextRunId = 1;
  private readonly runs = new Map<number, Pending>();

  constructor(
    private readonly watch: WebhookQueueWatch,
    @Inject(DELIVERY_WORKER_URL) private readonly workerUrl: DeliveryWorkerUrl,
  ) {}

  /**
   * Attempts `events` to the endpoint in order, each once the one before got a 2xx
   * (`delivered` is told of each), until one does not, the queue's stamp is no longer
   * `readAt`, or `signal` aborts: from then on no request of the run is written.
   */
  deliver(
    endpointId: string,
    endpoint: SenderEndpoint,
    events: StoredNameEvent[],
    options: { readAt: number | undefined; allowPrivateTargets: boolean; signal: AbortSignal },
    delivered: (eventId: string) => void,
  ): Promise<RunEnd> {
    const { readAt, allowPrivateTargets, signal } = options;
    const runId = this.nextRunId++;
    const stopped = new Int32Array(new SharedArrayBuffer(4));
    const cut = () => {
      Atomics.store(stopped, 0, 1);
      this.post({ type: 'cut', runId });
    };
    return new Promise<RunEnd>((resolve) => {
      this.runs.set(runId, {
        delivered,
        settle: (end) => {
          signal.removeEventListener('abort', cut);
          resolve(end);
        },
      });
      signal.addEventListener('abort', cut, { once: true });
      this.post({
        type: 'run',
        runId,
        endpointId,
        url: endpoint.url,
        format: endpoint.format,
        secret: endpoint.secret,
        allowPrivateTargets,
        events,
        readAt: readAt ?? null,
        stopped,
      });
      if (signal.aborted) cut();
    });
  }

  /** The endpoint's sender stopped: its connection is closed. */
  close(endpointId: string): void {
    if (this.worker) this.post({ type: 'close', endpointId });
  }

  async onModuleDestroy(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private post(message: ToDeliveryThread): void {
    this.started().postMessage(message);
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const data: DeliveryThreadData = { queue: this.watch.shared };
    const worker = new Worker(this.workerUrl(), { workerData: data });
    worker.unref();
    worker.on('message', (message: FromDeliveryThread) => this.received(message));
    worker.on('error', (error: Error) =>
      this.logger.error(`The delivery thread failed: ${error.stack ?? error.message}`),
    );
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      this.endAll(`the delivery thread stopped (exit code ${code})`);
    });
    this.worker = worker;
    return worker;
  }

  private received(message: FromDeliveryThread): void {
    const run = this.runs.get(message.runId);
    if (!run) return;
    if (message.type === 'delivered') {
      run.delivered(message.eventId);
    } else {
      this.runs.delete(message.runId);
      run.settle({ outcome: message.outcome, at: new Date(message.at) });
    }
  }

  private endAll(reason: string): void {
    const runs = [...this.runs.values()];
    this.runs.clear();
    for (const run of runs)
      run.settle({ outcome: { kind: 'error', message: reason }, at: new Date() });
  }
}
