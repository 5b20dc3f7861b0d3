import { createServer } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { stopAcceptingConnections } from './stop-accepting.js';

const REQUEST = 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';

/** A server answering `ok`, and a keep-alive connection to it that has had one answer. */
async function idleKeepAliveConnection() {
  let serverSide: net.Socket | undefined;
  const server = createServer((_req, res) => res.end('ok'));
  server.on('connection', (socket: net.Socket) => (serverSide = socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const client = net.connect({ port, host: '127.0.0.1' });
  client.on('error', () => undefined);
  let received = '';
  let waiting: { count: number; resolve: () => void } | undefined;
  const answered = () => received.split('HTTP/1.1 200 OK').length - 1;
  client.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
    if (waiting && answered() >= waiting.count) waiting.resolve();
  });
  /** Sends a request on the connection and waits for its answer. */
  const request = () =>
    new Promise<void>((resolve) => {
      waiting = { count: answered() + 1, resolve };
      client.write(REQUEST);
    });
  await request();
  const close = async () => {
    client.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return { server, port, serverSide: serverSide!, request, close };
}

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('stopAcceptingConnections', () => {
  it('refuses new connections and leaves an idle keep-alive connection serving', async () => {
    const { server, port, serverSide, request, close } = await idleKeepAliveConnection();
    try {
      stopAcceptingConnections(server);
      expect(serverSide.destroyed).toBe(false);
      expect(await connects(port)).toBe(false);
      await request();
      expect(serverSide.destroyed).toBe(false);
    } finally {
      await close();
    }
  });

  it("is needed: http.Server's close() closes an idle keep-alive connection at once", async () => {
    const { server, port, serverSide, close } = await idleKeepAliveConnection();
    try {
      server.close();
      expect(serverSide.destroyed).toBe(true);
      expect(await connects(port)).toBe(false);
    } finally {
      await close();
    }
  });
});
