import { Injectable } from '@nestjs/common';
import type { StoredNameEvent } from '../history/name-change-event.repository.js';
import { BusReceiver, NameEventBus } from './name-event-bus.js';

/** The bus of a single instance (no REDIS_URL): delivery is a function call. */
@Injectable()
export class InProcessNameEventBus extends NameEventBus {
  readonly kind = 'in-process';
  private receiver?: BusReceiver;

  async publish(events: readonly StoredNameEvent[], publishedAt: number): Promise<number[]> {
    return events.map((event) => {
      this.receiver?.deliver(event, publishedAt);
      return this.receiver ? 1 : 0;
    });
  }

  async attach(receiver: BusReceiver): Promise<void> {
    this.receiver = receiver;
  }

  async detach(): Promise<void> {
    this.receiver = undefined;
  }

  async ping(): Promise<void> {}

  /** Delivery happens inside publish(): there is never anything on the way. */
  async flush(): Promise<void> {}
}
