import { ExpressAdapter } from '@nestjs/platform-express';
import { createServer, type Server } from 'node:http';

/** Header fields in one request, Host included (431 past them, Node's own answer). */
export const MAX_HEADER_FIELDS = 2_000;

/**
 * Nest's Express adapter, with Node's HTTP server created with the options this service
 * needs (Nest's own passes none):
 * - `requireHostHeader: false`: a request without Host, like one with two, reaches the
 *   application, which refuses it with the error contract's body (request-line.ts); Node's
 *   own check answers a bare 400 and knows nothing of a second Host.
 * - `connectionsCheckingInterval` 1 s: Node's 30 s would let a timed-out request wait up to
 *   that long again for its 408 (the check visits only requests still arriving).
 * - `maxHeaderSize` 16 KiB and `maxHeadersCount` 2,000, set rather than left to Node's
 *   defaults, which changed in Node 24.18 (before it, fields past the count were dropped).
 * The service runs plain HTTP only: Nest's `httpsOptions`, `forceCloseConnections` and
 * `return503OnClosing` are not used (the drain on SIGTERM is HttpDrainService's).
 */
export class ExpressHttpAdapter extends ExpressAdapter {
  override initHttpServer(): void {
    const server: Server = createServer(
      { requireHostHeader: false, maxHeaderSize: 16 * 1024, connectionsCheckingInterval: 1_000 },
      this.getInstance(),
    );
    server.maxHeadersCount = MAX_HEADER_FIELDS;
    this.httpServer = server;
  }
}
