import net from 'node:net';

/**
 * A TCP proxy on a loopback port in front of a server (Postgres or Redis in the fault tests).
 * `cut()` drops every connection and resets new ones, as a dead or partitioned server would;
 * `stall()` keeps every connection open and carries nothing, as a hung server or a firewall
 * that drops packets would; `drop()` resets the open connections only; `restore()` lets
 * connections through again. The real server is never touched.
 */
export class TcpProxy {
  private readonly server: net.Server;
  /** Each open connection's two directions, to stop and start what they carry. */
  private readonly pipes = new Set<{ from: net.Socket; to: net.Socket }>();
  /** Each connection carried, with the first bytes its client sent (Postgres' startup packet). */
  private readonly connections = new Set<{
    client: net.Socket;
    upstream: net.Socket;
    first: string;
  }>();
  /** Connections accepted while stalled: forwarded once restored. */
  private held: net.Socket[] = [];
  private refusing = false;
  private stalled = false;
  /** Connections accepted and forwarded since the start. */
  forwarded = 0;
  /** Bytes the clients sent through the proxy since the start (a command written, say). */
  bytesFromClients = 0;

  private constructor(
    private readonly target: { host: string; port: number },
    readonly port: number,
    server: net.Server,
  ) {
    this.server = server;
  }

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const proxy = new TcpProxy(target, (server.address() as net.AddressInfo).port, server);
    server.on('connection', (client) => proxy.accept(client));
    return proxy;
  }

  get isCut(): boolean {
    return this.refusing;
  }

  /** Connections accepted while stalled, connected on the client's side and carried nowhere. */
  get heldCount(): number {
    return this.held.length;
  }

  /** Destroys every open connection and refuses (resets) new ones until `restore()`. */
  cut(): void {
    this.refusing = true;
    this.drop();
    for (const client of this.held.splice(0)) reset(client);
  }

  /** Resets every connection being carried; new ones are accepted (or held, while stalled). */
  drop(): void {
    for (const { from } of this.pipes) reset(from);
    this.pipes.clear();
  }

  /** Carries nothing more, either way, on open or new connections, until `restore()`. */
  stall(): void {
    this.stalled = true;
    for (const { from, to } of this.pipes) {
      from.unpipe(to);
      from.pause();
    }
  }

  /**
   * Holds what the server sends on the open connections whose client's first bytes contain
   * `text` (a Postgres client's startup packet names its application_name), until `release`;
   * `held` is what was held so far. Nothing else is touched.
   */
  holdFromServer(text: string): { held(): Buffer; release(): void } {
    const holds = [...this.connections]
      .filter((c) => c.first.includes(text))
      .map(({ client, upstream }) => {
        const chunks: Buffer[] = [];
        const collect = (chunk: Buffer) => chunks.push(chunk);
        upstream.unpipe(client);
        // unpipe() paused it: a listener alone would not make it flow again.
        upstream.on('data', collect).resume();
        return { client, upstream, chunks, collect };
      });
    if (holds.length === 0) throw new Error(`no connection whose client sent "${text}"`);
    return {
      held: () => Buffer.concat(holds.flatMap((h) => h.chunks)),
      release: () => {
        for (const { client, upstream, chunks, collect } of holds) {
          upstream.off('data', collect);
          client.write(Buffer.concat(chunks));
          upstream.pipe(client);
        }
      },
    };
  }

  restore(): void {
    this.refusing = false;
    if (!this.stalled) return;
    this.stalled = false;
    for (const { from, to } of this.pipes) from.pipe(to);
    for (const client of this.held.splice(0)) this.forward(client);
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    if (this.refusing) {
      client.on('error', () => undefined);
      reset(client);
      return;
    }
    if (this.stalled) {
      client.on('error', () => undefined);
      client.pause();
      this.held.push(client);
      return;
    }
    this.forward(client);
  }

  private forward(client: net.Socket): void {
    if (client.destroyed) return;
    this.forwarded++;
    const upstream = net.connect(this.target);
    const connection = { client, upstream, first: '' };
    this.connections.add(connection);
    client.on('close', () => this.connections.delete(connection));
    client.on('data', (chunk: Buffer) => {
      this.bytesFromClients += chunk.length;
      if (connection.first === '') connection.first = chunk.toString('latin1');
    });
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      const pipe = { from, to };
      this.pipes.add(pipe);
      from.on('error', () => to.destroy());
      from.on('close', () => {
        this.pipes.delete(pipe);
        to.destroy();
      });
      from.pipe(to);
    }
  }
}

/**
 * Resets a connection (RST), as a dead server would. One already ending (its peer closed its
 * side, or end() was called) is destroyed instead: Node 20 cannot reset a TCP handle that is
 * shutting down (libuv answers EINVAL), then never closes it, and the process cannot exit.
 */
function reset(socket: net.Socket): void {
  if (socket.writableEnded) socket.destroy();
  else socket.resetAndDestroy();
}

/** A proxy in front of the Postgres of `databaseUrl`, and the URL that goes through it. */
export async function proxiedDatabase(
  databaseUrl: string,
): Promise<{ proxy: TcpProxy; url: string }> {
  const direct = new URL(databaseUrl);
  const proxy = await TcpProxy.start({ host: direct.hostname, port: Number(direct.port || 5432) });
  const viaProxy = new URL(databaseUrl);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  return { proxy, url: viaProxy.toString() };
}
