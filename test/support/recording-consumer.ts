import { Inject, Injectable, Module } from '@nestjs/common';
import {
  NameEventConsumer,
  type NameEventHandler,
} from '../../src/name-events/consumers/name-event-consumer.decorator.js';
import type { StoredNameEvent } from '../../src/name-events/name-event.types.js';

/**
 * A consumer of the event log as a module of the tests' own would declare one: it records
 * the batches it was handed, and fails the next `failures` of them on request.
 */
@NameEventConsumer({ name: 'recorder', batchSize: 3, from: 'start' })
@Injectable()
export class RecordingConsumer implements NameEventHandler {
  readonly batches: StoredNameEvent[][] = [];
  /** Batches that failed, as they were handed over. */
  readonly failed: StoredNameEvent[][] = [];
  failures = 0;
  /** Batches told committed, as they were told. */
  readonly committedBatches: StoredNameEvent[][] = [];

  handle(events: readonly StoredNameEvent[]): Promise<void> {
    if (this.failures > 0) {
      this.failures -= 1;
      this.failed.push([...events]);
      return Promise.reject(new Error('a failure the test asked for'));
    }
    this.batches.push([...events]);
    return Promise.resolve();
  }

  committed(events: readonly StoredNameEvent[]): void {
    this.committedBatches.push([...events]);
  }

  /** Every event handled, in the order handled. */
  get handled(): StoredNameEvent[] {
    return this.batches.flat();
  }
}

@Module({ providers: [RecordingConsumer] })
export class RecordingConsumerModule {}

/** What ConfiguredRecorder is built with, as a module's configuration would give it. */
export const RECORDER_BATCH_SIZE = Symbol('recorder batch size');

/** A consumer whose batch size is known only once it is built (`consumerOptions`). */
@NameEventConsumer({ name: 'configured-recorder', from: 'start' })
@Injectable()
export class ConfiguredRecorder extends RecordingConsumer {
  readonly consumerOptions: { batchSize: number };

  constructor(@Inject(RECORDER_BATCH_SIZE) batchSize: number) {
    super();
    this.consumerOptions = { batchSize };
  }
}

@Module({ providers: [ConfiguredRecorder, { provide: RECORDER_BATCH_SIZE, useValue: 1 }] })
export class ConfiguredRecorderModule {}
