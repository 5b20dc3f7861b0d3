import { DiscoveryService } from '@nestjs/core';
import type { StoredNameEvent } from '../name-event.types.js';

/** How a consumer is run. */
export interface NameEventConsumerOptions {
  /** Its name: the key of its stored position and of its lease. Never rename a consumer. */
  name: string;
  /** Events handed to `handle` at most at once (default 100). */
  batchSize?: number;
  /**
   * Where a consumer seen for the first time starts: after the newest stored event (`now`,
   * the default: it acts on what happens from its first start on) or at the very first one
   * (`start`: it also works through everything already stored).
   */
  from?: 'now' | 'start';
  /**
   * Once caught up and woken by a new event, how long it waits before it reads, gathering
   * the events stored meanwhile into one batch (default 50 ms): the latency it adds to each
   * event, against a transaction per batch on the instance that runs it.
   */
  gatherMs?: number;
}

/**
 * A durable consumer of the name-event log: its `handle` gets every stored event (published
 * by POST, the detector, anything) in increasing id order, in batches, on exactly one
 * instance at a time, with its position kept in Postgres.
 *
 * `handle` runs in a transaction with the update of the position, and every repository it
 * calls joins that transaction: what it writes to the database commits together with the
 * position, so it happens once. Anything else it does (an HTTP call) may happen again after
 * a crash (at least once): write the intent to a table of your own here, and act on it
 * outside. A batch that throws is tried again, with back-off, until it succeeds. Events
 * erased before a batch was read are not in it.
 */
export interface NameEventHandler {
  /**
   * Options known only once the handler is built, from its module's configuration (a
   * configured batch size): they take the place of the decorator's.
   */
  readonly consumerOptions?: Partial<Omit<NameEventConsumerOptions, 'name'>>;
  handle(events: readonly StoredNameEvent[]): Promise<void>;
  /**
   * Called once the batch `handle` wrote has committed (optional): to wake whatever acts on
   * what it wrote on this instance, which would find nothing before the commit.
   */
  committed?(events: readonly StoredNameEvent[]): void;
}

/**
 * Marks a provider (implementing NameEventHandler) as a consumer of the name-event log:
 * `@NameEventConsumer({ name: 'webhooks' })`. Found and run by NameEventConsumersService.
 */
export const NameEventConsumer = DiscoveryService.createDecorator<NameEventConsumerOptions>();
