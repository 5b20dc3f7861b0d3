import type { NestApplicationOptions } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import type { Express, Response } from 'express';
import { createServer, IncomingMessage, ServerResponse, type Server } from 'node:http';
import { MAX_HEADER_BYTES, MAX_HEADER_FIELDS } from './http-answers.js';

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
 *
 * The server also constructs requests and responses that are Express's from birth. Express
 * gives each request its methods (`res.json`, `req.get`…) with `Object.setPrototypeOf` on
 * Node's `req` and `res` at the start of every request. Here they are made as subclasses of
 * Node's classes whose prototypes sit in front of Express's (`app.request` and
 * `app.response` are replaced by them, and inherit from the originals), so Express's
 * `setPrototypeOf` finds the prototype already in place and changes nothing. Every method is
 * where it was, one link further down the chain. On Node 24 V8 caches the prototype change
 * well enough that hidden classes stay shared either way, but the change itself still cost
 * Express's request setup about half its time on a history read (BENCHMARKS.md); the spec
 * beside this file fails when Express stops changing prototypes, and this can go.
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
    const app = this.getInstance<Express>();
    class ExpressRequest extends IncomingMessage {}
    class ExpressResponse extends ServerResponse {}
    Object.setPrototypeOf(ExpressRequest.prototype, app.request);
    Object.setPrototypeOf(ExpressResponse.prototype, app.response);
    app.request = ExpressRequest.prototype as Express['request'];
    app.response = ExpressResponse.prototype as unknown as Express['response'];
    const server: Server = createServer(
      {
        IncomingMessage: ExpressRequest,
        ServerResponse: ExpressResponse,
        requireHostHeader: false,
        maxHeaderSize: MAX_HEADER_BYTES,
        connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
      },
      this.getInstance(),
    );
    server.maxHeadersCount = MAX_HEADER_FIELDS;
    this.httpServer = server;
  }

  /**
   * A handler's plain object (or array), answered as JSON in one write of its own: the same
   * bytes and headers as Express's `res.json()` gives them here (no ETag, no JSON settings),
   * without its content-type parsing, charset rewriting and freshness check, about a tenth
   * of a history read (BENCHMARKS.md). Anything else (a class instance, a stream, an error,
   * a Content-Type set by the handler, a 204 or 304) goes Nest's way.
   */
  override reply(response: Response, body: unknown, statusCode?: number): unknown {
    const status = statusCode ?? response.statusCode;
    if (
      !isPlainJson(body) ||
      status === 204 ||
      status === 304 ||
      response.hasHeader('Content-Type')
    ) {
      return super.reply(response, body, statusCode);
    }
    const json = JSON.stringify(body);
    response.statusCode = status;
    response.setHeader('Content-Type', JSON_CONTENT_TYPE);
    response.setHeader('Content-Length', Buffer.byteLength(json));
    return response.req.method === 'HEAD' ? response.end() : response.end(json);
  }
}

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** An object literal or an array: what JSON.stringify turns into the same text Express would. */
function isPlainJson(body: unknown): body is object {
  if (Array.isArray(body)) return true;
  if (typeof body !== 'object' || body === null) return false;
  const prototype: unknown = Object.getPrototypeOf(body);
  return prototype === Object.prototype || prototype === null;
}
