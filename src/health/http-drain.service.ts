import { BeforeApplicationShutdown, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { stopAcceptingConnections } from '../platform/stop-accepting.js';

/**
 * How long a keep-alive connection that is idle when draining begins may still bring one
 * more request (answered, with `Connection: close`) before it is closed. A client posting
 * back-to-back has its connection idle for a moment between two requests: closing it in
 * that moment would race the request it is about to send.
 */
const IDLE_GRACE_MS = 500;

/**
 * Takes the HTTP server out of service without failing a request (SIGTERM, see main.ts):
 * it stops accepting connections, answers every request still to be answered with
 * `Connection: close` so that clients and proxies take their next request elsewhere, lets
 * the requests in flight finish with their real answer, and closes each connection as soon
 * as it has nothing left to answer (a stream that ends included: it was sent with
 * `Connection: keep-alive`, and a proxy would reuse it to bring a reconnecting listener
 * back here). Readiness answers 503 from the start.
 */
@Injectable()
export class HttpDrainService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private server?: Server;
  /** Each connection's number of requests not yet answered (forgotten with the connection). */
  private readonly connections = new WeakMap<Socket, number>();
  private readonly unanswered = new Set<ServerResponse>();
  private graceOver?: Promise<void>;

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  get isDraining(): boolean {
    return this.graceOver !== undefined;
  }

  /** Before the server listens (app.listen() initialises the application first). */
  onApplicationBootstrap(): void {
    const server = this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined;
    if (!server) return;
    this.server = server;
    // First, so the header is in place before any handler can answer.
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) =>
      this.track(req.socket, res),
    );
  }

  /**
   * Starts draining, once. Idle keep-alive connections get IDLE_GRACE_MS to bring one
   * more request; after that, whatever is idle is closed.
   */
  begin(): void {
    if (this.graceOver || !this.server) return;
    const server = this.server;
    // Not server.close(): the connections idle at this instant get IDLE_GRACE_MS first.
    stopAcceptingConnections(server);
    for (const res of this.unanswered) {
      if (!res.headersSent) res.setHeader('Connection', 'close');
    }
    this.graceOver = new Promise((resolve) => {
      setTimeout(() => {
        server.closeIdleConnections();
        resolve();
      }, IDLE_GRACE_MS);
    });
  }

  /**
   * Drains on every shutdown, `app.close()` without a signal included (a test, an embedding
   * script), and holds the application's shutdown (and so Nest's own server.close(), which
   * closes idle connections too) until the grace is over.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.begin();
    await this.graceOver;
  }

  private track(socket: Socket, res: ServerResponse): void {
    if (this.graceOver) res.setHeader('Connection', 'close');
    this.unanswered.add(res);
    this.connections.set(socket, (this.connections.get(socket) ?? 0) + 1);
    res.once('close', () => {
      this.unanswered.delete(res);
      const open = this.connections.get(socket)! - 1;
      this.connections.set(socket, open);
      // Answered with keep-alive before draining began (a stream, a slow answer): nothing
      // more is to come on this connection, so it ends here rather than idling.
      if (this.graceOver && open === 0 && !socket.destroyed) socket.destroySoon();
    });
  }
}
