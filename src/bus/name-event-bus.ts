import type { Observable } from 'rxjs';
import type { StoredNameEvent } from '../name-events/index.js';

/** The bus could not be reached. */
export class BusUnavailableError extends Error {
  override readonly name = 'BusUnavailableError';
}

/** A rejection handler: the broker's error, rethrown as a BusUnavailableError saying `what` failed. */
export function unavailable(what: string): (error: Error) => never {
  return (error) => {
    throw new BusUnavailableError(`${what}: ${error.message}`);
  };
}

/** This instance's subscription, held by one listener: `release()` it when done. */
export interface BusSubscription {
  /**
   * Every event any instance publishes from now on, in the order the broker received them,
   * shared by all of this instance's holders. Errors with BusUnavailableError when live
   * delivery broke (events may have been missed).
   */
  readonly deliveries$: Observable<StoredNameEvent>;
  release(): void;
}

/**
 * Carries stored events to every instance that has listeners. One implementation per
 * deployment shape: Redis pub/sub between instances, or in-process for a single one.
 * An instance is subscribed only while one of its listeners holds a subscription, so the
 * count `publish` returns is the number of instances that have listeners.
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

  /**
   * Holds this instance's subscription (subscribing it if it is the first holder). Rejects
   * with BusUnavailableError when the broker cannot be reached.
   */
  abstract subscribe(): Promise<BusSubscription>;

  /** Resolves when the broker answers; rejects otherwise. */
  abstract ping(): Promise<void>;

  /**
   * Resolves once every event whose publish was acknowledged before the call has been
   * delivered to this instance's subscription.
   */
  abstract flush(): Promise<void>;
}
