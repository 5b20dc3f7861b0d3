import type { StoredNameEvent } from '../history/name-change-event.repository.js';

/** What the bus calls on the instance's one consumer (the event stream fan-out). */
export interface BusReceiver {
  /**
   * An event published by any instance, in the order the broker received them.
   * `publishedAt` is when its publish started (epoch ms, the publishing instance's clock).
   */
  deliver(event: StoredNameEvent, publishedAt: number): void;
  /** Live delivery stopped (the broker connection was lost): events may have been missed. */
  interrupted(reason: Error): void;
}

/** The bus could not be reached. */
export class BusUnavailableError extends Error {
  override readonly name = 'BusUnavailableError';
}

/**
 * Carries stored events to every instance that has listeners. One implementation per
 * deployment shape: Redis pub/sub between instances, or in-process for a single one.
 * An instance is subscribed only while it has listeners, so the count `publish` returns
 * is the number of instances that have listeners.
 */
export abstract class NameEventBus {
  /** `redis` or `in-process`, for the logs and readiness. */
  abstract readonly kind: 'redis' | 'in-process';

  /**
   * Sends the events, in this order, to every subscribed instance (one round trip to the
   * broker); resolves with how many instances received each. Rejects with
   * BusUnavailableError when the broker cannot be reached.
   */
  abstract publish(events: readonly StoredNameEvent[], publishedAt: number): Promise<number[]>;

  /** Subscribes this instance, delivering to `receiver`. Rejects with BusUnavailableError. */
  abstract attach(receiver: BusReceiver): Promise<void>;

  /** Unsubscribes this instance. */
  abstract detach(): Promise<void>;

  /** Resolves when the broker answers; rejects otherwise. */
  abstract ping(): Promise<void>;

  /**
   * Resolves once every event whose publish was acknowledged before the call has been
   * delivered to this instance's receiver.
   */
  abstract flush(): Promise<void>;
}
