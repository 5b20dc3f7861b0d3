import { describe, expect, it } from '@jest/globals';
import { StoredSequence } from './stored-sequence.js';

describe('StoredSequence', () => {
  it('stays below the oldest dispatch not yet done, whatever order they finish in', () => {
    const sequence = new StoredSequence();
    sequence.reset(1);
    for (const s of [2, 3, 4]) sequence.begin(s);
    expect(sequence.stored).toBe(1);
    sequence.end(3);
    sequence.end(4);
    expect(sequence.stored).toBe(1);
    sequence.end(2);
    expect(sequence.stored).toBe(4);
  });

  it('starts again from a new or loaded session', () => {
    const sequence = new StoredSequence();
    sequence.begin(7);
    sequence.reset(40);
    expect(sequence.stored).toBe(40);
    sequence.begin(41);
    expect(sequence.stored).toBe(40);
  });
});
