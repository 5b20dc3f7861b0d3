/**
 * One full view of one server being compared with the last known names: the members of its
 * GUILD_CREATE, then those of the member chunks that follow. Done when every member that
 * arrived has been compared and no more are expected; `done` then gets the figures.
 */
export class ReconciliationRun {
  members = 0;
  changes = 0;
  private pending = 0;
  private finished = false;

  constructor(
    readonly guildId: string,
    /** performance.now() at the GUILD_CREATE (or first chunk). */
    readonly startedAt: number,
    private expectingMore: boolean,
    private readonly done: (run: ReconciliationRun) => void,
  ) {}

  /** `count` members arrived (queued for comparison). */
  arrived(count: number): void {
    this.members += count;
    this.pending += count;
  }

  /** Every member the view will bring has arrived (the last chunk, or none expected). */
  complete(): void {
    this.expectingMore = false;
    this.check();
  }

  /** `count` of its members were compared, with `changes` changes recorded. */
  compared(count: number, changes: number): void {
    this.pending -= count;
    this.changes += changes;
    this.check();
  }

  private check(): void {
    if (this.finished || this.expectingMore || this.pending > 0) return;
    this.finished = true;
    this.done(this);
  }
}
