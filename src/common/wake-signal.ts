/**
 * "Something may have changed", counted: a waiter says what it last saw (`generation`), and
 * wakes at once if something came after it, else at the next notification, after `ms`, or on
 * abort, whichever is first. Nothing is lost between a look and the wait that follows it.
 */
export class WakeSignal {
  private count = 0;
  private readonly waiters = new Set<() => void>();

  get generation(): number {
    return this.count;
  }

  notify(): void {
    this.count += 1;
    for (const wake of [...this.waiters]) wake();
  }

  /**
   * A timer and a listener of its own, not `AbortSignal.any([signal, …])`: composed with a
   * lease's long-lived signal on every idle poll, those leak (about 0.5 KB each on Node 24,
   * nodejs/node#54614).
   */
  after(generation: number, ms: number, signal: AbortSignal): Promise<void> {
    if (generation !== this.count || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        signal.removeEventListener('abort', wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.waiters.add(wake);
      signal.addEventListener('abort', wake, { once: true });
    });
  }
}
