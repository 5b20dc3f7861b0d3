import { describe, expect, it } from '@jest/globals';
import { Fifo } from './fifo.js';

describe('Fifo', () => {
  it('gives items back in order across blocks, with its length', () => {
    const fifo = new Fifo<number>();
    expect(fifo.shift()).toBeUndefined();
    for (let i = 0; i < 2_500; i++) fifo.push(i);
    expect(fifo.length).toBe(2_500);
    const shifted = Array.from({ length: 1_100 }, () => fifo.shift());
    expect(shifted).toEqual(Array.from({ length: 1_100 }, (_, i) => i));
    expect(fifo.length).toBe(1_400);
    expect([...fifo]).toEqual(Array.from({ length: 1_400 }, (_, i) => 1_100 + i));
  });

  it('keeps order when pushes and shifts interleave, and starts afresh once emptied', () => {
    const fifo = new Fifo<number>();
    const out: number[] = [];
    let next = 0;
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 97; i++) fifo.push(next++);
      for (let i = 0; i < 60 && fifo.length > 0; i++) out.push(fifo.shift()!);
    }
    while (fifo.length > 0) out.push(fifo.shift()!);
    expect(out).toEqual(Array.from({ length: next }, (_, i) => i));
    expect([...fifo]).toEqual([]);
    fifo.push(7);
    expect([...fifo]).toEqual([7]);
    fifo.clear();
    expect(fifo.length).toBe(0);
    expect(fifo.shift()).toBeUndefined();
  });
});
