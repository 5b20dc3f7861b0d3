/**
 * Works through a queue one piece at a time: `kick()` starts a run when none is under way
 * (and does nothing while one is), the run takes pieces with `take` and hands each to
 * `process` until `take` finds nothing. `take` is called in the same turn as the run's end,
 * so a piece queued at any moment is either taken by the run under way or starts a new one.
 * A `process` that throws ends the run (`onError` hears of it); the next kick starts anew.
 */
export class DrainLoop<T> {
  private run?: Promise<void>;
  private stopped = false;

  constructor(
    private readonly take: () => T | undefined,
    private readonly process: (piece: T) => Promise<void>,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** Whether a run is under way. */
  get running(): boolean {
    return this.run !== undefined;
  }

  kick(): void {
    if (this.run) return;
    // Taken here, so a run always awaits a piece before it ends: `run` is never left set by a
    // run that found nothing and ended before it was assigned.
    const first = this.next();
    if (first !== undefined) this.run = this.drain(first);
  }

  /** No run starts from now on; resolves once the run under way (if any) has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.run;
  }

  private async drain(first: T): Promise<void> {
    try {
      for (let piece: T | undefined = first; piece !== undefined; piece = this.next()) {
        await this.process(piece);
      }
    } catch (error) {
      this.onError(error);
    } finally {
      this.run = undefined;
    }
  }

  private next(): T | undefined {
    return this.stopped ? undefined : this.take();
  }
}
