/** Slots in the first block of a queue that was empty: most queues hold an item or two. */
const FIRST_BLOCK = 16;
/** Slots in a block at most: 8 KiB, far below the size at which V8 makes an array a large object. */
const MAX_BLOCK = 1024;

/**
 * A queue whose `shift` does not move the whole array, kept in blocks (as Node's own
 * FixedQueue keeps its callbacks): 16 slots, each next block twice the last, up to 1,024.
 * One array of tens of thousands of items would be a large object, which V8 moves to the old
 * generation the first time a young collection finds it alive; the copies left behind as it
 * grows would then keep every item they held alive until the next full collection, and
 * promote them too. Blocks stay young and small, and a slot is cleared as its item leaves.
 */
export class Fifo<T> {
  private blocks: (T | undefined)[][] = [];
  /** The first item's slot in blocks[0]. */
  private head = 0;
  /** The next free slot in the last block. */
  private tail = 0;
  private count = 0;

  get length(): number {
    return this.count;
  }

  push(item: T): void {
    let last = this.blocks[this.blocks.length - 1];
    if (!last || this.tail === last.length) {
      const size = last ? Math.min(last.length * 2, MAX_BLOCK) : FIRST_BLOCK;
      last = new Array<T | undefined>(size);
      this.blocks.push(last);
      this.tail = 0;
    }
    last[this.tail++] = item;
    this.count += 1;
  }

  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const block = this.blocks[0];
    const item = block[this.head];
    block[this.head++] = undefined;
    this.count -= 1;
    if (this.count === 0) this.clear();
    else if (this.head === block.length) {
      this.blocks.shift();
      this.head = 0;
    }
    return item;
  }

  clear(): void {
    this.blocks = [];
    this.head = 0;
    this.tail = 0;
    this.count = 0;
  }

  /** The items, first to last. */
  *[Symbol.iterator](): IterableIterator<T> {
    const last = this.blocks.length - 1;
    for (let b = 0; b <= last; b++) {
      const block = this.blocks[b];
      const end = b === last ? this.tail : block.length;
      for (let i = b === 0 ? this.head : 0; i < end; i++) yield block[i] as T;
    }
  }
}
