import { Logger } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';
import type { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import type { NameChangeEventRepository } from '../name-change-event.repository.js';
import type { ConsumerPositionsRepository } from './consumer-positions.repository.js';
import type {
  NameEventConsumerOptions,
  NameEventHandler,
} from './name-event-consumer.decorator.js';

/** Woken once caught up, a consumer waits this long before it reads (unless it says). */
export const GATHER_MS = 50;
/** Back-off after a failed batch: 1 s, doubling, up to a minute. */
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 60_000;

export interface ConsumerRunDeps {
  txHost: TransactionHost<TransactionalAdapterTypeOrm>;
  events: NameChangeEventRepository;
  positions: ConsumerPositionsRepository;
  /** Called before each read: what is stored from now on wakes `nextWake`. */
  reading(): void;
  /**
   * Resolves once an event may have been stored since the last `reading()` (at once if one
   * was: this instance's publishes tell), or after `ms` (another instance's), or on abort.
   */
  nextWake(ms: number, signal: AbortSignal): Promise<void>;
  /** Told of each batch handled, and each failure. */
  handled(count: number): void;
  failed(error: unknown): void;
}

/**
 * One consumer, while this instance holds its lease: reads the events after its position,
 * hands them to the handler and moves the position, in one transaction, batch after batch
 * (the position is read and locked at first and after a failure; then the run knows it, and
 * each move checks it is still where the run left it),
 * until there is nothing left; then waits to be woken (or for the poll). Ends when `signal`
 * aborts (the lease lost, or shutdown).
 */
export async function runConsumer(
  { name, batchSize, from, gatherMs }: Required<NameEventConsumerOptions>,
  handler: NameEventHandler,
  pollMs: number,
  deps: ConsumerRunDeps,
  signal: AbortSignal,
): Promise<void> {
  const logger = new Logger('Consumers');
  let failures = 0;
  /** The position as this run last stored it; read (locked) again after a failure. */
  let known: string | undefined;
  while (!signal.aborted) {
    try {
      deps.reading();
      const { position, batch } = await deps.txHost.withTransaction(async () => {
        const position = known ?? (await deps.positions.lock(name, from));
        // The lease was lost while waiting for the row: whoever holds it now has it.
        if (signal.aborted) return { position: undefined, batch: [] };
        const events = await deps.events.findOldestAfterId(position, batchSize);
        if (events.length === 0) return { position, batch: events };
        await handler.handle(events);
        // Only from where this run stored it: another holder's move undoes this batch.
        const moved = events[events.length - 1].id;
        await deps.positions.move(name, position, moved);
        return { position: moved, batch: events };
      });
      known = position;
      const count = batch.length;
      if (count > 0) handler.committed?.(batch);
      failures = 0;
      deps.handled(count);
      if (count < batchSize) {
        await deps.nextWake(pollMs, signal);
        // Let a few more arrive: a batch per publish would cost the publish path's event loop
        // a transaction per publish.
        await delay(gatherMs, undefined, { signal }).catch(() => undefined);
      }
    } catch (error) {
      known = undefined;
      failures += 1;
      deps.failed(error);
      const wait = Math.min(RETRY_FIRST_MS * 2 ** (failures - 1), RETRY_MAX_MS);
      logger.warn(
        `Consumer ${name}: a batch failed (attempt ${failures}; next in ${wait} ms): ${(error as Error).message}`,
      );
      await delay(wait, undefined, { signal }).catch(() => undefined);
    }
  }
}
