import { setTimeout as delay } from 'node:timers/promises';

/** "Events may have been read": a sender that found none waits for this, or the poll. */
export class SenderWake {
  private woken = false;
  private waiting?: () => void;

  notify(): void {
    this.woken = true;
    this.waiting?.();
  }

  /** Before a look: what is read from now on wakes the next `wait`. */
  look(): void {
    this.woken = false;
  }

  /**
   * A timer and a listener of its own, not `AbortSignal.any([signal, wake])`: composed with
   * the lease's long-lived signal on every idle poll, those leak (about 0.5 KB each on Node
   * 24, nodejs/node#54614).
   */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.woken || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.waiting = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.waiting = done;
    });
  }
}

/** Waits `ms`, or less when `signal` aborts; never rejects. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch(() => undefined);
}
