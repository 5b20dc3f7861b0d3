import type { NestExpressApplication } from '@nestjs/platform-express';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ConfigOf } from '../config/config-section.js';
import type { httpConfig } from '../config/http.config.js';
import { deferContinue } from './json-body.js';
import { checkRequestLine } from './request-line.js';

/** The request line and headers, then the whole request, must arrive within these times. */
type HttpLayerSettings = Pick<ConfigOf<typeof httpConfig>, 'headersTimeoutMs' | 'requestTimeoutMs'>;

/**
 * Node's HTTP server as this service runs it. What Node refuses by itself (a request its
 * parser refuses, an oversized head, a timeout, an `Expect` other than `100-continue`) gets
 * Node's own answer, a bare 400, 413, 417, 431 or 408. Here: the timeouts, `100 Continue`
 * only once the body is wanted, an answer to `CONNECT` (Node would close the connection
 * without a word) and the request-line checks for what Node lets through.
 */
export function configureHttpLayer(app: NestExpressApplication, settings: HttpLayerSettings): void {
  const server: Server = app.getHttpServer();
  server.headersTimeout = settings.headersTimeoutMs;
  server.requestTimeout = settings.requestTimeoutMs;
  deferContinue(server);
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    const body = JSON.stringify({ message: `Cannot CONNECT ${req.url ?? ''}`, code: 404 });
    socket.end(
      'HTTP/1.1 404 Not Found\r\nContent-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      () => socket.destroy(),
    );
  });
  app.use(checkRequestLine);
}
