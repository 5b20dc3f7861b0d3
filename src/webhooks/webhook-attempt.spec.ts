import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { attemptDelivery, SenderConnection } from './webhook-attempt.js';

/** A receiver on loopback: answers 204, and counts the requests whose body it read whole. */
describe('attemptDelivery', () => {
  let server: Server;
  let url: URL;
  const bodies: string[] = [];
  const connection = new SenderConnection();
  const never = new AbortController().signal;
  const request = { body: '{"n":1}', headers: {} };
  const send = (current: () => boolean) =>
    attemptDelivery(
      url,
      [{ address: '127.0.0.1', family: 4 }],
      'standard',
      request,
      connection,
      never,
      current,
    );

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        bodies.push(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(204).end();
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`);
  });

  afterAll(async () => {
    connection.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('writes nothing when what it sends went out of date before the write, and goes on after', async () => {
    expect(await send(() => true)).toEqual({ kind: 'delivered' });
    // The kept-alive connection is written on only after a turn: a notification read in it
    // (here: the flag set at once) keeps the request unsent.
    let current = true;
    const stale = send(() => current);
    current = false;
    expect(await stale).toEqual({ kind: 'stale' });
    expect(await send(() => true)).toEqual({ kind: 'delivered' });
    expect(bodies).toEqual([request.body, request.body]);
  });
});
