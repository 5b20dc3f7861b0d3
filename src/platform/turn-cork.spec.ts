import { afterEach, describe, expect, it } from '@jest/globals';
import { once } from 'node:events';
import { createServer, get, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TurnCork } from './turn-cork.js';

const nextTick = () => new Promise<void>((resolve) => process.nextTick(resolve));
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Canaries: what TurnCork relies on in Node's HTTP response. Each serves one streamed
 * response on loopback and reads, from the server's side, how many bytes wait in the socket
 * (`writableLength`) after writes made a tick apart, as Nest's `@Sse()` makes them.
 */
describe('TurnCork', () => {
  let close: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await close?.();
    close = undefined;
  });

  /** Runs `handle` on the response of one GET; resolves with what it returns. */
  async function onResponse<T>(handle: (res: ServerResponse) => Promise<T>): Promise<T> {
    let result!: Promise<T>;
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      result = handle(res).finally(() => res.end());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    close = () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    };
    const { port } = server.address() as AddressInfo;
    const [response] = (await once(get({ port, host: '127.0.0.1' }), 'response')) as [
      NodeJS.ReadableStream,
    ];
    response.resume();
    await once(response, 'end');
    return result;
  }

  it("is needed: Node's response lets a write go a tick later, so writes a tick apart go apart", async () => {
    const waiting = await onResponse(async (res) => {
      res.write('data: 1\n\n');
      await nextTick();
      return res.socket!.writableLength;
    });
    expect(waiting).toBe(0);
  });

  it('holds writes a tick apart until the turn ends, then lets them go', async () => {
    const cork = new TurnCork();
    const [held, after] = await onResponse(async (res) => {
      cork.hold(res.socket!);
      res.write('data: 1\n\n');
      await nextTick();
      res.write('data: 2\n\n');
      await nextTick();
      const held = res.socket!.writableLength;
      await nextTurn();
      return [held, res.socket!.writableLength];
    });
    // Both messages, each a chunk of the chunked encoding ("9\r\n…\r\n"), and the head.
    expect(held).toBeGreaterThan(2 * '9\r\ndata: 1\n\n\r\n'.length);
    expect(after).toBe(0);
  });
});
