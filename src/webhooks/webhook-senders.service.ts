import {
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import {
  NameEventConsumer,
  NameEventLogRepository,
  NameEventRemovalsService,
  OnNameEvent,
  type NameEventHandler,
  type StoredNameEvent,
} from '../name-events/index.js';
import { WebhooksMetrics } from './webhooks.metrics.js';
import { LeaseCompetition, Leases } from '../redis/index.js';
import { attemptDelivery, SenderConnection, type AttemptOutcome } from './webhook-attempt.js';
import { pause, retryDelayMs } from './webhook-backoff.js';
import { WebhookEndpointsRepository, type SenderEndpoint } from './webhook-endpoints.repository.js';
import { webhookRequest } from './webhook-payloads.js';
import { WakeSignal } from '../common/wake-signal.js';
import { vetTarget } from './webhook-targets.js';
import { webhooksConfig } from './webhooks.config.js';

/** The name of the webhooks' consumer of the event log: senders read what it has handled. */
export const WEBHOOKS_CONSUMER = 'webhooks';

/** Events read at once. */
const BATCH = 100;

interface Sender {
  competition: LeaseCompetition;
  stop?: AbortController;
  run?: Promise<void>;
}

/**
 * The senders of this instance: for every endpoint, a competition for its lease
 * (`webhook:<id>`), so that exactly one instance at a time sends to it; the holder runs its
 * deliveries (deliver). Endpoints created or deleted on another instance are found every
 * WEBHOOK_POLL_MS; this instance's own at once. Deliveries run whatever ADMIN_TOKEN says.
 * Every `events.removed` (an erasure, an opt-out, retention, on any instance) makes every
 * sender read its events again before its next attempt.
 *
 * Also the webhooks' door into the event log: the consumer's position is how far the senders
 * read it (every event up to it is committed, in id order: NameEventLogRepository.findHandled),
 * and each batch it commits wakes them.
 */
@NameEventConsumer({ name: WEBHOOKS_CONSUMER, batchSize: 500, gatherMs: 200 })
@Injectable()
export class WebhookSendersService
  implements NameEventHandler, OnApplicationBootstrap, OnModuleDestroy
{
  private readonly logger = new Logger('Webhooks');
  private readonly senders = new Map<string, Sender>();
  private syncTimer?: NodeJS.Timeout;
  private stopped = false;
  /** How many `events.removed` this instance heard. */
  private removals = 0;
  /** Notified as the webhooks consumer reads more events: senders that found none look again. */
  private readonly handled = new WakeSignal();

  constructor(
    private readonly leases: Leases,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly log: NameEventLogRepository,
    private readonly nameEventRemovals: NameEventRemovalsService,
    @InjectConfig(webhooksConfig) private readonly config: ConfigOf<typeof webhooksConfig>,
    private readonly metrics: WebhooksMetrics,
  ) {}

  onApplicationBootstrap(): void {
    void this.sync();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.syncTimer);
    await Promise.all([...this.senders.keys()].map((id) => this.remove(id)));
  }

  /** Starts competing for a new endpoint's lease (this instance created it). */
  add(id: string): void {
    if (this.stopped || this.senders.has(id)) return;
    const sender: Sender = {
      competition: new LeaseCompetition(this.leases, `webhook:${id}`, this.config.leaseMs, {
        acquired: (lease) => {
          const stop = new AbortController();
          lease.signal.addEventListener('abort', () => stop.abort(), { once: true });
          sender.stop = stop;
          sender.run = this.run(id, sender, stop.signal);
        },
      }),
    };
    this.senders.set(id, sender);
    sender.competition.start();
  }

  /** Stops sending to an endpoint (deleted): an attempt under way may finish. */
  async remove(id: string): Promise<void> {
    const sender = this.senders.get(id);
    if (!sender) return;
    this.senders.delete(id);
    sender.stop?.abort();
    await sender.run;
    await this.release(id, sender);
  }

  /** Lets the endpoint's lease go; a lease store that is down only costs its expiry. */
  private release(id: string, sender: Sender): Promise<void> {
    return sender.competition
      .stop()
      .catch((error: Error) => this.logger.warn(`Endpoint ${id}: ${error.message}`));
  }

  @OnNameEvent('events.removed')
  removed(): void {
    this.removals += 1;
  }

  /** Nothing to write: the position, moved with the batch, is what the senders read up to. */
  async handle(): Promise<void> {}

  committed(): void {
    this.handled.notify();
  }

  private async run(id: string, sender: Sender, signal: AbortSignal): Promise<void> {
    this.logger.log(`Endpoint ${id}: sending from this instance`);
    await this.deliver(id, signal).catch((error: Error) =>
      this.logger.error(`Endpoint ${id}: ${error.message}`),
    );
    // Found deleted (on another instance) or gone: stop competing for it.
    if (!signal.aborted && this.senders.get(id) === sender) {
      this.senders.delete(id);
      await this.release(id, sender);
    }
  }

  /**
   * The deliveries of one endpoint, while this instance holds its lease: the oldest undelivered
   * event, attempted until it gets a 2xx, retried with back-off otherwise, then the next one:
   * in id order, one at a time, each result recorded before the next attempt. Events are read
   * a batch at a time from what the webhooks consumer has handled, and the batch is trusted
   * until events are removed anywhere (`removals` changes): an attempt not yet written is
   * then dropped and the batch read again. While removals on other instances may go unheard,
   * it reads one event before each attempt instead. Ends when `signal` aborts (the lease lost,
   * the endpoint deleted here, shutdown) or the endpoint is found deleted or gone (a 410).
   */
  private async deliver(endpointId: string, signal: AbortSignal): Promise<void> {
    const warn = (error: unknown) =>
      this.logger.warn(`Endpoint ${endpointId}: ${(error as Error).message}`);
    const connection = new SenderConnection();
    let failures = 0;
    try {
      while (!signal.aborted) {
        const seen = this.handled.generation;
        const readAt = this.removals;
        let endpoint: SenderEndpoint | undefined;
        let events: StoredNameEvent[];
        let through: string;
        try {
          endpoint = await this.endpoints.findForSender(endpointId);
          if (!endpoint) return;
          const limit = this.nameEventRemovals.heardEverywhere ? BATCH : 1;
          ({ events, through } = await this.log.findHandled(
            WEBHOOKS_CONSUMER,
            endpoint.deliveredThrough,
            endpoint,
            limit,
          ));
          if (events.length === 0) {
            // Read past events not its own: the next read starts after them.
            if (through !== endpoint.deliveredThrough) {
              await this.endpoints.delivered(endpointId, null, through);
            }
            await this.handled.after(seen, this.config.pollMs, signal);
            continue;
          }
        } catch (error) {
          warn(error);
          await pause(this.config.pollMs, signal);
          continue;
        }
        const current = () => !signal.aborted && this.removals === readAt;
        for (const [i, event] of events.entries()) {
          const at = new Date();
          const outcome = await this.attempt(endpoint, event, at, connection, signal, current);
          if (outcome.kind === 'stale') break;
          // Cut short (the lease lost, the endpoint deleted, shutdown): whoever sends next tries again.
          if (signal.aborted) return;
          this.metrics.attempts.inc({ endpoint: endpointId, outcome: outcome.kind });
          if (outcome.kind === 'delivered') {
            failures = 0;
            const upTo = i === events.length - 1 ? through : event.id;
            const recorded = await this.endpoints.delivered(endpointId, event.id, upTo).catch(warn);
            if (recorded === false) return;
            if (recorded === undefined) break;
            continue;
          }
          await this.endpoints.failed(endpointId, at, outcome.kind === 'gone').catch(warn);
          if (outcome.kind !== 'gone') {
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
   * The address check (`refused` when the target fails it: vetTarget throws nothing else), then
   * the request, unless `current` says no as it is about to be written.
   */
  private async attempt(
    { url: target, format, secret }: SenderEndpoint,
    event: StoredNameEvent,
    at: Date,
    connection: SenderConnection,
    signal: AbortSignal,
    current: () => boolean,
  ): Promise<AttemptOutcome> {
    if (!current()) return { kind: 'stale' };
    const url = new URL(target);
    const addresses = await vetTarget(url, this.config.allowPrivateTargets).catch(() => undefined);
    if (!addresses) return { kind: 'refused' };
    const request = webhookRequest(format, event, secret, at);
    return attemptDelivery(url, addresses, format, request, connection, signal, current);
  }

  /** Competes for the endpoints that exist, and for no other. */
  private async sync(): Promise<void> {
    try {
      const active = new Set(await this.endpoints.findActiveIds());
      for (const id of active) this.add(id);
      const gone = [...this.senders.keys()].filter((id) => !active.has(id));
      await Promise.all(gone.map((id) => this.remove(id)));
    } catch (error) {
      this.logger.warn(`Could not list the webhook endpoints: ${(error as Error).message}`);
    }
    if (!this.stopped) this.syncTimer = setTimeout(() => void this.sync(), this.config.pollMs);
  }
}
