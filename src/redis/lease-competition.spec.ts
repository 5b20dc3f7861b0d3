import { describe, expect, it } from '@jest/globals';
import { LeaseCompetition } from './lease-competition.js';
import { Leases, type LeaseAttempt } from './leases.js';

/** A store that never becomes available, as Redis down. */
class UnavailableLeases extends Leases {
  readonly description = 'never available';
  attempts = 0;
  /** Resolves once an attempt waits for the store. */
  readonly asked: Promise<void>;
  private ask: () => void = () => undefined;

  constructor() {
    super();
    this.asked = new Promise((resolve) => (this.ask = resolve));
  }

  tryAcquire(): Promise<LeaseAttempt> {
    this.attempts += 1;
    return Promise.reject(new Error('not available'));
  }

  whenAvailable(): Promise<void> {
    this.ask();
    return new Promise(() => undefined);
  }
}

describe('LeaseCompetition', () => {
  it('stops while its attempt waits for a store that is down', async () => {
    const leases = new UnavailableLeases();
    const competition = new LeaseCompetition(leases, 'x', 1_000, {
      acquired: () => undefined,
    });
    competition.start();
    await leases.asked;
    await competition.stop();
    expect(leases.attempts).toBe(0);
    expect(competition.holding).toBe(false);
  });
});
