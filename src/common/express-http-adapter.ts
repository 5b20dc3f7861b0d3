import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { createServer } from 'node:http';

/**
 * Nest's Express adapter, with Node's HTTP server created with the options this service
 * needs: Node's own check for a missing Host header is off (`requireHostHeader: false`), so
 * that the same check in the application answers with the error contract's JSON body
 * (Node's answer is a bare 400 with no body).
 */
export class ExpressHttpAdapter extends ExpressAdapter {
  override initHttpServer(options: NestApplicationOptions): void {
    if (options.httpsOptions || options.forceCloseConnections || options.return503OnClosing) {
      // Options this service does not use: Nest's own server for them.
      super.initHttpServer(options);
      return;
    }
    this.httpServer = createServer({ requireHostHeader: false }, this.getInstance());
  }
}
