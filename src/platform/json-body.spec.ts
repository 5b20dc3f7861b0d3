import express, { json, type ErrorRequestHandler, type RequestHandler } from 'express';
import { createServer, type IncomingMessage } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { refuseAnnouncedBodyOverLimit } from './json-body.js';

const LIMIT = 16;
const HEAD = `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`;

/**
 * A server running `handlers`, and one request to it: the head announcing a 100-byte body,
 * the body written only once the server has the request. Resolves with what the client
 * received once the server closes the connection, and whether the request's body had all
 * arrived when the answer began.
 */
async function exchange(handlers: RequestHandler[]) {
  let completeWhenAnswered: boolean | undefined;
  const app = express();
  app.use((req, res, next) => {
    res.once('prefinish', () => (completeWhenAnswered ??= req.complete));
    next();
  });
  app.use(...handlers);
  app.use(((error: { status?: number }, _req, res, _next) => {
    res
      .status(error.status ?? 500)
      .set('Connection', 'close')
      .end();
  }) as ErrorRequestHandler);
  const server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const client = net.connect({ port, host: '127.0.0.1' });
    client.on('error', () => undefined);
    // The body, sent from the server's side of the exchange as soon as it has the request:
    // an answer given on the head alone is written before these bytes can come back in.
    server.once('request', (_req: IncomingMessage) => {
      setImmediate(() => client.write('x'.repeat(100), () => undefined));
    });
    client.write(HEAD);
    let received = '';
    client.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    await new Promise((resolve) => client.on('close', resolve));
    return { received, completeWhenAnswered };
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe('refuseAnnouncedBodyOverLimit', () => {
  it('is needed: body-parser refuses a body over the limit by its Content-Length only once it has read all of it', async () => {
    const { received, completeWhenAnswered } = await exchange([json({ limit: LIMIT })]);
    expect(received.startsWith('HTTP/1.1 413 ')).toBe(true);
    expect(completeWhenAnswered).toBe(true);
  });

  it('answers 413 on the head alone, before a byte of the body, and closes the connection', async () => {
    const { received, completeWhenAnswered } = await exchange([
      refuseAnnouncedBodyOverLimit(LIMIT),
      json({ limit: LIMIT }),
    ]);
    expect(received.startsWith('HTTP/1.1 413 Payload Too Large\r\n')).toBe(true);
    expect(received).toContain('\r\nConnection: close\r\n');
    expect(
      received.endsWith('\r\n\r\n{"message":"Request body exceeds the 16 KiB limit","code":413}'),
    ).toBe(true);
    expect(completeWhenAnswered).toBe(false);
  });
});
