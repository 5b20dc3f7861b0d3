/** A lease this instance holds: released by it, or lost (then `signal` is aborted). */
export interface Lease {
  readonly name: string;
  /**
   * Aborted when the lease is lost (taken over, or not renewed in time): the holder must stop
   * at once, before another instance can take it. Never aborted by `release()`.
   */
  readonly signal: AbortSignal;
  /** Gives the lease up (idempotent). */
  release(): Promise<void>;
}

/** An attempt at a lease: taken, or held by another instance for about `heldForMs` more. */
export type LeaseAttempt = { lease: Lease } | { lease?: undefined; heldForMs: number };

/**
 * Leases: what exactly one instance at a time may do (run the detector's shard, deliver to
 * a webhook endpoint, run the retention job…). With Redis every instance competes for a key;
 * with the embedded default there is one instance, and only its own holders compete.
 * A lease taken is renewed in the background (with every other lease of the instance, in one
 * round trip) until it is released or lost.
 */
export abstract class Leases {
  /** For the logs: where the leases are. */
  abstract readonly description: string;

  /** Tries once to take the lease `name` for `ttlMs`. Rejects when Redis cannot answer. */
  abstract tryAcquire(name: string, ttlMs: number): Promise<LeaseAttempt>;

  /** Resolves once the leases' store can be asked (at once without Redis). */
  abstract whenAvailable(): Promise<void>;
}

/**
 * The leases of a single instance (no Redis): nobody else competes, so a lease is free
 * unless one of this instance's own holders has it, and it is never lost.
 */
export class LocalLeases extends Leases {
  readonly description = 'single instance, leases in memory';
  private readonly held = new Set<string>();

  tryAcquire(name: string): Promise<LeaseAttempt> {
    if (this.held.has(name)) return Promise.resolve({ heldForMs: 1_000 });
    this.held.add(name);
    let released = false;
    const release = () => {
      if (!released) this.held.delete(name);
      released = true;
      return Promise.resolve();
    };
    return Promise.resolve({ lease: { name, signal: new AbortController().signal, release } });
  }

  whenAvailable(): Promise<void> {
    return Promise.resolve();
  }
}
