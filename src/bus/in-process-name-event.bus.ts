import { Subject } from 'rxjs';
import type { StoredNameEvent } from '../name-events/index.js';
import { BusSubscription, NameEventBus } from './name-event-bus.js';

/** The bus of a single instance (no Redis): delivery is a function call. */
export class InProcessNameEventBus extends NameEventBus {
  readonly kind = 'in-process';
  private readonly deliveries = new Subject<StoredNameEvent>();
  private holders = 0;

  publish(events: readonly StoredNameEvent[]): Promise<number[]> {
    const receivers = this.holders > 0 ? 1 : 0;
    if (receivers) for (const event of events) this.deliveries.next(event);
    return Promise.resolve(events.map(() => receivers));
  }

  subscribe(): Promise<BusSubscription> {
    this.holders++;
    let held = true;
    return Promise.resolve({
      deliveries$: this.deliveries.asObservable(),
      release: () => {
        if (held) this.holders--;
        held = false;
      },
    });
  }

  async ping(): Promise<void> {}

  /** Delivery happens inside publish(): there is never anything on the way. */
  async flush(): Promise<void> {}
}
