import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { createServer, type Server } from 'node:http';
import { MAX_HEADER_BYTES, MAX_HEADER_FIELDS } from './malformed-requests.js';

/**
 * How often Node looks for requests past their headers or request timeout. Node's default,
 * 30 s, would let a timed-out request wait up to that long again for its 408; the check only
 * visits connections whose request is still arriving, so doing it every second is cheap.
 */
const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

/**
 * Nest's Express adapter, with Node's HTTP server created with the options this service
 * needs: Node's own check for a missing Host header is off (`requireHostHeader: false`), so
 * that the same check in the application answers with the error contract's JSON body
 * (Node's answer is a bare 400 with no body); and the limits of a request's head are set
 * here rather than left to Node's defaults, which differ between Node versions (Node 24.18
 * started refusing requests with more header fields than `maxHeadersCount`, 1,000 unless
 * set).
 */
export class ExpressHttpAdapter extends ExpressAdapter {
  override initHttpServer(options: NestApplicationOptions): void {
    if (options.httpsOptions || options.forceCloseConnections || options.return503OnClosing) {
      // Options this service does not use: Nest's own server for them, with the field count
      // (its maxHeaderSize is Node's default, which is the same 16 KiB).
      super.initHttpServer(options);
      (this.httpServer as Server).maxHeadersCount = MAX_HEADER_FIELDS;
      return;
    }
    const server: Server = createServer(
      {
        requireHostHeader: false,
        maxHeaderSize: MAX_HEADER_BYTES,
        connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
      },
      this.getInstance(),
    );
    server.maxHeadersCount = MAX_HEADER_FIELDS;
    this.httpServer = server;
  }
}
