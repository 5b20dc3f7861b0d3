import type { MessageEvent } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { Subject } from 'rxjs';
import { ListenerBuffer, type Frame } from './listener-buffer.js';

/** A response that only says whether it is backed up, and drains when told. */
class FakeResponse extends EventEmitter {
  writableNeedDrain = false;
  destroyed = false;
  destroy(): void {
    this.destroyed = true;
  }
  drain(): void {
    this.writableNeedDrain = false;
    this.emit('drain');
  }
}

const frame = (id: string, bytes = 20, last?: boolean): Frame => ({
  message: { id, data: `{"n":${id}}` },
  bytes,
  ...(last ? { last } : {}),
});
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

function subscribed(limitBytes: number) {
  const response = new FakeResponse();
  const buffer = new ListenerBuffer(response as unknown as Writable, limitBytes);
  const frames = new Subject<Frame>();
  const seen: string[] = [];
  let completed = false;
  frames.pipe(buffer.deliver).subscribe({
    next: (message: MessageEvent) => seen.push(String(message.id)),
    complete: () => (completed = true),
  });
  return { response, buffer, frames, seen, completed: () => completed };
}

describe('ListenerBuffer', () => {
  it('passes frames straight on while the response takes writes', () => {
    const { frames, seen } = subscribed(1_000);
    frames.next(frame('1'));
    frames.next(frame('2'));
    expect(seen).toEqual(['1', '2']);
  });

  it('holds frames while the response is backed up, in order, and lets them go as it drains', async () => {
    const { response, frames, seen } = subscribed(1_000);
    frames.next(frame('1'));
    response.writableNeedDrain = true;
    frames.next(frame('2'));
    frames.next(frame('3'));
    expect(seen).toEqual(['1']);
    await nextTurn();
    expect(seen).toEqual(['1']);
    response.drain();
    expect(seen).toEqual(['1', '2', '3']);
    frames.next(frame('4'));
    expect(seen).toEqual(['1', '2', '3', '4']);
  });

  it('is ready for more only once nothing waits and the response drained', async () => {
    const { response, buffer, frames } = subscribed(1_000);
    expect(buffer.ready()).toBeUndefined();
    response.writableNeedDrain = true;
    frames.next(frame('1'));
    let ready = false;
    void buffer.ready()!.then(() => (ready = true));
    await nextTurn();
    expect(ready).toBe(false);
    response.drain();
    await nextTurn();
    expect(ready).toBe(true);
    expect(buffer.ready()).toBeUndefined();
  });

  it('cuts the listener once more than its bound waits, and marks it slow', () => {
    const { response, buffer, frames, seen } = subscribed(50);
    response.writableNeedDrain = true;
    frames.next(frame('1'));
    frames.next(frame('2'));
    expect([response.destroyed, buffer.slow]).toEqual([false, false]);
    frames.next(frame('3'));
    expect([response.destroyed, buffer.slow]).toEqual([true, true]);
    expect(seen).toEqual([]);
  });

  it('completes after the last frame, or drops a backed-up response instead of waiting for it', () => {
    const reading = subscribed(1_000);
    reading.frames.next(frame('1', 20, true));
    expect([reading.seen, reading.completed(), reading.response.destroyed]).toEqual([
      ['1'],
      true,
      false,
    ]);

    const stuck = subscribed(1_000);
    stuck.response.writableNeedDrain = true;
    stuck.frames.next(frame('1'));
    stuck.frames.next(frame('2', 20, true));
    expect([stuck.seen, stuck.completed(), stuck.response.destroyed]).toEqual([[], false, true]);
  });
});
