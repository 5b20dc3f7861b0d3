import { Leases, type LeaseAttempt } from './leases.js';

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
