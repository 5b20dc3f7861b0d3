import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express } from 'express';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';

/**
 * Nest's Express adapter, with Node's HTTP server creating requests and responses that are
 * Express's from birth.
 *
 * Express gives each request its methods (`res.json`, `req.get`…) by calling
 * `Object.setPrototypeOf` on Node's `req` and `res` at the start of every request. V8 then
 * gives each of those objects hidden classes of its own, and every property added later (by
 * Express, Nest, the logger) builds more: measured here, that cost a bare Express 5 app
 * three quarters of its request rate, and each open stream about 2 KB of heap
 * (BENCHMARKS.md).
 *
 * Here Node's server constructs `req` and `res` as subclasses of its own classes whose
 * prototypes sit in front of Express's (`app.request` and `app.response` are replaced by
 * them, and inherit from the originals). Express's `setPrototypeOf` then finds the
 * prototype already in place and changes nothing, and the hidden classes stay shared by all
 * requests. Every method Express, Nest and middleware rely on is where it was, one link
 * further down the prototype chain.
 */
export class ExpressHttpAdapter extends ExpressAdapter {
  override initHttpServer(options: NestApplicationOptions): void {
    if (options.httpsOptions || options.forceCloseConnections || options.return503OnClosing) {
      // Options this service does not use: Nest's own server for them.
      super.initHttpServer(options);
      return;
    }
    const app = this.getInstance<Express>();
    class ExpressRequest extends IncomingMessage {}
    class ExpressResponse extends ServerResponse {}
    Object.setPrototypeOf(ExpressRequest.prototype, app.request);
    Object.setPrototypeOf(ExpressResponse.prototype, app.response);
    app.request = ExpressRequest.prototype as Express['request'];
    app.response = ExpressResponse.prototype as unknown as Express['response'];
    this.httpServer = createServer(
      { IncomingMessage: ExpressRequest, ServerResponse: ExpressResponse },
      app,
    );
  }
}
