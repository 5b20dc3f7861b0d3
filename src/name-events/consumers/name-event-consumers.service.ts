import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import {
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { InjectConfig, type ConfigOf } from '../../config/config-section.js';
import { NameEventsMetrics } from '../name-events.metrics.js';
import { LeaseCompetition, Leases } from '../../redis/index.js';
import { NameChangeEventRepository } from '../name-change-event.repository.js';
import { NameEventsService } from '../name-events.service.js';
import { ConsumerPositionsRepository } from './consumer-positions.repository.js';
import { GATHER_MS, runConsumer } from './consumer-run.js';
import { consumersConfig } from './consumers.config.js';
import {
  NameEventConsumer,
  type NameEventConsumerOptions,
  type NameEventHandler,
} from './name-event-consumer.decorator.js';
import { WakeSignal } from './wake-signal.js';

/** The lag is counted up to this many events (a count past it costs more than it tells). */
const LAG_COUNT_CAP = 1_000_000;

interface Running {
  options: Required<NameEventConsumerOptions>;
  competition: LeaseCompetition;
  /** The run under way while this instance holds the lease. */
  run?: Promise<void>;
  stop?: AbortController;
}

/**
 * Runs every `@NameEventConsumer` of the application: each competes for its lease
 * (`consumer:<name>`, so that one instance at a time runs it), and the holder works through
 * the event log from the stored position. Woken at once by this instance's publishes, it
 * looks every CONSUMER_POLL_MS for those of other instances. Stopped before the database
 * and Redis close.
 */
@Injectable()
export class NameEventConsumersService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Consumers');
  private readonly consumers: Running[] = [];
  private readonly stored = new WakeSignal();

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly leases: Leases,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly events: NameChangeEventRepository,
    private readonly positions: ConsumerPositionsRepository,
    nameEvents: NameEventsService,
    @InjectConfig(consumersConfig) private readonly config: ConfigOf<typeof consumersConfig>,
    private readonly metrics: NameEventsMetrics,
  ) {
    nameEvents.onStored(() => this.stored.notify());
    metrics.onCollect(() => this.collectLag());
  }

  async onApplicationBootstrap(): Promise<void> {
    for (const wrapper of this.discovery.getProviders({ metadataKey: NameEventConsumer.KEY })) {
      const found = this.discovery.getMetadataByDecorator(NameEventConsumer, wrapper);
      const handler = wrapper.instance as NameEventHandler | undefined;
      if (!found || !handler) continue;
      const options = { batchSize: 100, from: 'now' as const, gatherMs: GATHER_MS, ...found };
      await this.positions.ensure(options.name, options.from).catch((error: Error) =>
        // The database is down: the run creates the row once it is back.
        this.logger.warn(`Consumer ${options.name}: not registered yet (${error.message})`),
      );
      this.start(options, handler);
    }
  }

  /** Before the database and Redis connections close: the runs end, the leases are let go. */
  async onModuleDestroy(): Promise<void> {
    for (const consumer of this.consumers) consumer.stop?.abort();
    await Promise.all(this.consumers.map((consumer) => consumer.run ?? Promise.resolve()));
    await Promise.all(this.consumers.map((consumer) => consumer.competition.stop()));
  }

  private start(options: Required<NameEventConsumerOptions>, handler: NameEventHandler): void {
    const consumer: Running = {
      options,
      competition: new LeaseCompetition(
        this.leases,
        `consumer:${options.name}`,
        this.config.leaseMs,
        {
          acquired: (lease) => {
            const stop = new AbortController();
            lease.signal.addEventListener('abort', () => stop.abort(), { once: true });
            consumer.stop = stop;
            consumer.run = this.run(consumer, handler, stop.signal);
          },
        },
      ),
    };
    this.consumers.push(consumer);
    consumer.competition.start();
  }

  private async run(consumer: Running, handler: NameEventHandler, signal: AbortSignal) {
    const { name } = consumer.options;
    this.logger.log(`Consumer ${name}: running on this instance`);
    let since = this.stored.generation;
    await runConsumer(
      consumer.options,
      handler,
      this.config.pollMs,
      {
        txHost: this.txHost,
        events: this.events,
        positions: this.positions,
        reading: () => (since = this.stored.generation),
        nextWake: (ms, abort) => this.stored.after(since, ms, abort),
        handled: (count) => this.metrics.consumerEvents.inc({ consumer: name }, count),
        failed: () => this.metrics.consumerFailures.inc({ consumer: name }),
      },
      signal,
    );
  }

  private async collectLag(): Promise<void> {
    await Promise.all(
      this.consumers.map(async ({ options: { name } }) => {
        const lag = await this.positions.lag(name, LAG_COUNT_CAP);
        this.metrics.consumerLagEvents.set({ consumer: name }, lag.events);
        this.metrics.consumerLagSeconds.set({ consumer: name }, lag.seconds);
      }),
    );
  }
}
