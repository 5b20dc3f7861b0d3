/**
 * A shard's sequence as far as its changes are stored: the highest sequence up to which
 * every dispatch has been handled to the end (its members compared and any change stored).
 * @discordjs/ws counts a sequence as seen before the dispatch is even handled; a session
 * saved with that sequence and resumed by another instance would skip what was still
 * waiting in this one's outbox. Saved with this one, Discord replays it instead (comparing
 * again with the known names records nothing twice).
 */
export class StoredSequence {
  private highest = 0;
  private readonly pending = new Set<number>();

  /** A new (or newly loaded) session, seen up to `sequence`. */
  reset(sequence: number): void {
    this.highest = sequence;
    this.pending.clear();
  }

  begin(sequence: number): void {
    this.pending.add(sequence);
    if (sequence > this.highest) this.highest = sequence;
  }

  end(sequence: number): void {
    this.pending.delete(sequence);
  }

  /** Every dispatch up to this sequence is done. */
  get stored(): number {
    let lowest = Infinity;
    for (const sequence of this.pending) if (sequence < lowest) lowest = sequence;
    return lowest === Infinity ? this.highest : lowest - 1;
  }
}
