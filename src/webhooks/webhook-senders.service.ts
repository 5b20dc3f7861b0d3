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
} from '../name-events/index.js';
import { WebhooksMetrics } from './webhooks.metrics.js';
import { LeaseCompetition, Leases } from '../redis/index.js';
import { positionOf, WebhookEndpointsRepository } from './webhook-endpoints.repository.js';
import { runSender, SenderWake, WEBHOOKS_CONSUMER } from './webhook-sender.js';
import { webhooksConfig } from './webhooks.config.js';

interface Sender {
  competition: LeaseCompetition;
  wake: SenderWake;
  stop?: AbortController;
  run?: Promise<void>;
}

/**
 * The senders of this instance: for every endpoint, a competition for its lease
 * (`webhook:<id>`), so that exactly one instance at a time sends to it; the holder runs its
 * deliveries (runSender). Endpoints created or deleted on another instance are found every
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

  constructor(
    private readonly leases: Leases,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly log: NameEventLogRepository,
    private readonly nameEventRemovals: NameEventRemovalsService,
    @InjectConfig(webhooksConfig) private readonly config: ConfigOf<typeof webhooksConfig>,
    private readonly metrics: WebhooksMetrics,
  ) {
    metrics.onCollect(() => this.collectPending());
  }

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
      wake: new SenderWake(),
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
    await sender.competition
      .stop()
      .catch((error: Error) => this.logger.warn(`Endpoint ${id}: ${error.message}`));
  }

  @OnNameEvent('events.removed')
  removed(): void {
    this.removals += 1;
  }

  /** Nothing to write: the position, moved with the batch, is what the senders read up to. */
  async handle(): Promise<void> {}

  /** The webhooks consumer read more events: the senders that found none look again. */
  committed(): void {
    for (const sender of this.senders.values()) sender.wake.notify();
  }

  private async run(id: string, sender: Sender, signal: AbortSignal): Promise<void> {
    this.logger.log(`Endpoint ${id}: sending from this instance`);
    await runSender(
      id,
      {
        endpoints: this.endpoints,
        log: this.log,
        allowPrivateTargets: this.config.allowPrivateTargets,
        pollMs: this.config.pollMs,
        attempted: (outcome) => this.metrics.attempts.inc({ endpoint: id, outcome }),
        removals: () => this.removals,
        heardEverywhere: () => this.nameEventRemovals.heardEverywhere,
      },
      sender.wake,
      signal,
    ).catch((error: Error) => this.logger.error(`Endpoint ${id}: ${error.message}`));
    // Found deleted (on another instance): stop competing for it.
    if (!signal.aborted && this.senders.get(id) === sender) {
      this.senders.delete(id);
      await sender.competition.stop();
    }
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

  private async collectPending(): Promise<void> {
    const endpoints = await this.endpoints.findAll();
    const counts = await this.log.countAfter(endpoints.map(positionOf));
    this.metrics.pending.reset();
    endpoints.forEach(({ id }, i) => this.metrics.pending.set({ endpoint: id }, counts[i]));
  }
}
