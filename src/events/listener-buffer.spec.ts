import type { MessageEvent } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { Subject } from 'rxjs';
import { TurnCork } from '../platform/turn-cork.js';
import { ListenerBuffer, TurnCounter, type Frame } from './listener-buffer.js';

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
  const buffer = new ListenerBuffer(
    response as unknown as Writable,
    limitBytes,
    new TurnCounter(),
    new TurnCork(),
  );
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
  it("holds the response's socket corked for the turn: the turn's messages go out as one write", async () => {
    // A socket that records how many chunks each of its writes carried (a writev: several).
    const writes: number[] = [];
    const socket = new Writable({
      write: (_chunk, _encoding, done) => {
        writes.push(1);
        done();
      },
      writev: (chunks, done) => {
        writes.push(chunks.length);
        done();
      },
    });
    const response = Object.assign(new FakeResponse(), { socket });
    const buffer = new ListenerBuffer(
      response as unknown as Writable,
      1_000,
      new TurnCounter(),
      new TurnCork(),
    );
    const frames = new Subject<Frame>();
    // Each message written to the socket on its own, as Nest does.
    frames.pipe(buffer.deliver).subscribe((message) => socket.write(`${message.id}`));
    frames.next(frame('1'));
    frames.next(frame('2'));
    expect(socket.writableCorked).toBe(1);
    expect(writes).toEqual([]);
    await nextTurn();
    expect(socket.writableCorked).toBe(0);
    expect(writes).toEqual([2]);
  });

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

  it('hands Nest at most 64 KiB a turn, the rest in the turns after', async () => {
    const { frames, seen } = subscribed(1024 * 1024);
    for (let id = 1; id <= 5; id++) frames.next(frame(String(id), 30 * 1024));
    expect(seen).toEqual(['1', '2']);
    await nextTurn();
    expect(seen).toEqual(['1', '2', '3', '4']);
    await nextTurn();
    expect(seen).toEqual(['1', '2', '3', '4', '5']);
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
