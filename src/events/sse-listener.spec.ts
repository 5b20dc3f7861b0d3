import type { MessageEvent } from '@nestjs/common';
import type { Socket } from 'node:net';
import { Subscriber } from 'rxjs';
import { SseListener } from './sse-listener.js';

/** A socket that only counts how it is corked; nothing is written to it here. */
function countingSocket() {
  const calls: string[] = [];
  const socket = {
    bytesWritten: 0,
    writableNeedDrain: false,
    cork: () => calls.push('cork'),
    uncork: () => calls.push('uncork'),
  };
  return { socket: socket as unknown as Socket, calls };
}

const frame = (id: string) => ({ message: { id, data: `{"n":${id}}` }, bytes: 20 });
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('SseListener', () => {
  it("holds a turn's messages to each socket corked, and lets them go at the turn's end", async () => {
    const a = countingSocket();
    const b = countingSocket();
    const seen: string[] = [];
    const listener = (socket: Socket, name: string) =>
      new SseListener(
        new Subscriber<MessageEvent>({
          next: (message: MessageEvent) => seen.push(`${name}:${String(message.id)}`),
          error: () => undefined,
          complete: () => undefined,
        }),
        socket,
        undefined,
        '0',
      );
    const onA = listener(a.socket, 'a');
    const onB = listener(b.socket, 'b');

    onA.sendEvent('1', frame('1'));
    onB.sendEvent('1', frame('1'));
    onA.sendEvent('2', frame('2'));
    onB.sendEvent('2', frame('2'));

    // Handed on at once, in order; the sockets corked once each until the turn ends.
    expect(seen).toEqual(['a:1', 'b:1', 'a:2', 'b:2']);
    expect([a.calls, b.calls]).toEqual([['cork'], ['cork']]);
    await nextTurn();
    expect([a.calls, b.calls]).toEqual([
      ['cork', 'uncork'],
      ['cork', 'uncork'],
    ]);

    onA.sendEvent('3', frame('3'));
    await nextTurn();
    expect([a.calls, b.calls]).toEqual([
      ['cork', 'uncork', 'cork', 'uncork'],
      ['cork', 'uncork'],
    ]);
    expect(seen).toEqual(['a:1', 'b:1', 'a:2', 'b:2', 'a:3']);
    expect([onA.lastId, onA.events, onB.lastId, onB.events]).toEqual(['3', 3, '2', 2]);
  });
});
