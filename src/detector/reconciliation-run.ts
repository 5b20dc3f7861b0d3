/**
 * One full view of one server being compared with the last known names: the members of its
 * GUILD_CREATE, then those of the member chunks that follow. Done when every member that
 * arrived has been compared and no more are expected; `done` then gets the figures.
 */
export class ReconciliationRun {
  /** Members queued for comparison (not those dropped past the bound). */
  members = 0;
  /** Changes their comparison recorded. */
  changes = 0;
  /** Dispatches of the view whose members are not all compared yet. */
  private pending = 0;
  private finished = false;

  constructor(
    readonly guildId: string,
    /** performance.now() at the GUILD_CREATE (or first chunk). */
    readonly startedAt: number,
    private expectingMore: boolean,
    private readonly done: (run: ReconciliationRun) => void,
  ) {}

  /** A dispatch of the view arrived: returns what calls `then` once its members are compared. */
  track(then: () => void): () => void {
    this.pending += 1;
    return () => {
      then();
      this.pending -= 1;
      this.check();
    };
  }

  /** Every member the view will bring has arrived (the last chunk, or none expected). */
  complete(): void {
    this.expectingMore = false;
    this.check();
  }

  private check(): void {
    if (this.finished || this.expectingMore || this.pending > 0) return;
    this.finished = true;
    this.done(this);
  }
}
