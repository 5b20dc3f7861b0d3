/** A delay that `interrupt()` ends at once: to stop, or to go on without waiting it out. */
export class InterruptibleDelay {
  private interruptWaiting?: () => void;

  wait(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.interruptWaiting = done;
    }).finally(() => (this.interruptWaiting = undefined));
  }

  interrupt(): void {
    this.interruptWaiting?.();
  }
}
