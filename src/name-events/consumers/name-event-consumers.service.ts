import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import {
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { setTimeout as delay } from 'node:timers/promises';
import { InjectConfig, type ConfigOf } from '../../config/config-section.js';
import { NameEventsMetrics } from '../name-events.metrics.js';
import { LeaseCompetition, Leases } from '../../redis/index.js';
import { NameEventsService } from '../name-events.service.js';
import { ConsumerPositionsRepository } from './consumer-positions.repository.js';
import { consumersConfig } from './consumers.config.js';
import {
  NameEventConsumer,
  type NameEventConsumerOptions,
  type NameEventHandler,
} from './name-event-consumer.decorator.js';

/** Woken once caught up, a consumer waits this long before it reads (unless it says). */
const GATHER_MS = 50;
/** Back-off after a failed batch: 1 s, doubling, up to a minute. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 60_000;
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

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly leases: Leases,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly positions: ConsumerPositionsRepository,
    private readonly nameEvents: NameEventsService,
    @InjectConfig(consumersConfig) private readonly config: ConfigOf<typeof consumersConfig>,
    private readonly metrics: NameEventsMetrics,
  ) {
    metrics.onCollect(() => this.collectLag());
  }

  async onApplicationBootstrap(): Promise<void> {
    for (const wrapper of this.discovery.getProviders({ metadataKey: NameEventConsumer.KEY })) {
      const found = this.discovery.getMetadataByDecorator(NameEventConsumer, wrapper);
      const handler = wrapper.instance as NameEventHandler | undefined;
      if (!found || !handler) continue;
      const options = {
        batchSize: 100,
        from: 'now' as const,
        gatherMs: GATHER_MS,
        ...found,
        ...handler.consumerOptions,
      };
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

  /**
   * One consumer, while this instance holds its lease: reads the events after its position,
   * hands them to the handler and moves the position, in one transaction, batch after batch
   * (the position is read and locked at first and after a failure; then the run knows it, and
   * each move checks it is still where the run left it),
   * until there is nothing left; then waits to be woken (or for the poll). Ends when `signal`
   * aborts (the lease lost, or shutdown).
   */
  private async run(consumer: Running, handler: NameEventHandler, signal: AbortSignal) {
    const { name, batchSize, from, gatherMs } = consumer.options;
    this.logger.log(`Consumer ${name}: running on this instance`);
    let failures = 0;
    /** The position as this run last stored it; read (locked) again after a failure. */
    let known: string | undefined;
    while (!signal.aborted) {
      try {
        // Taken before the read: what is stored from now on wakes the wait below.
        const since = this.nameEvents.stored.generation;
        const { position, batch } = await this.txHost.withTransaction(async () => {
          const position = known ?? (await this.positions.lock(name, from));
          // The lease was lost while waiting for the row: whoever holds it now has it.
          if (signal.aborted) return { position: undefined, batch: [] };
          const events = await this.positions.findOldestAfterId(position, batchSize);
          if (events.length === 0) return { position, batch: events };
          await handler.handle(events);
          // Only from where this run stored it: another holder's move undoes this batch.
          const moved = events[events.length - 1].id;
          await this.positions.move(name, position, moved);
          return { position: moved, batch: events };
        });
        known = position;
        if (batch.length > 0) handler.committed?.(batch);
        failures = 0;
        this.metrics.consumerEvents.inc({ consumer: name }, batch.length);
        if (batch.length < batchSize) {
          // At once if this instance stored an event since the read; another instance's are
          // found by the poll.
          await this.nameEvents.stored.after(since, this.config.pollMs, signal);
          // Let a few more arrive: a batch per publish would cost the publish path's event
          // loop a transaction per publish.
          await delay(gatherMs, undefined, { signal }).catch(() => undefined);
        }
      } catch (error) {
        known = undefined;
        failures += 1;
        this.metrics.consumerFailures.inc({ consumer: name });
        const wait = Math.min(RETRY_FIRST_MS * 2 ** (failures - 1), RETRY_MAX_MS);
        this.logger.warn(
          `Consumer ${name}: a batch failed (attempt ${failures}; next in ${wait} ms): ${(error as Error).message}`,
        );
        await delay(wait, undefined, { signal }).catch(() => undefined);
      }
    }
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
