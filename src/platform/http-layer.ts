import type { NestExpressApplication } from '@nestjs/platform-express';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { answerClientErrors } from './client-errors.js';
import { answerExpectations } from './expect-continue.js';
import { endWithJson } from './http-answers.js';
import { checkRequestLine } from './request-line.js';

export interface HttpLayerSettings {
  /** The request line and headers must arrive within this time (Node's `headersTimeout`). */
  headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this time (`requestTimeout`). */
  requestTimeoutMs: number;
}

/**
 * The error contract for every answer Node's HTTP layer would give by itself, with a bare
 * status and an empty body: a request its parser refuses (invalid bytes, an oversized head,
 * a malformed request line, an HTTP major version other than 1), a request that times out
 * (408), an `Expect` other than `100-continue` (417), a `CONNECT` (which Node answers by
 * closing the connection), and an HTTP/1.1 request without Host; and what Node lets through
 * but RFC 9112 refuses, a request with more than one Host (which Node reads as the first).
 * Here each gets `{message, code}`. Only public `http.Server` events and settings are used.
 */
export function answerHttpLayerWithJson(
  app: NestExpressApplication,
  settings: HttpLayerSettings,
): void {
  const server: Server = app.getHttpServer();
  server.headersTimeout = settings.headersTimeoutMs;
  server.requestTimeout = settings.requestTimeoutMs;
  answerClientErrors(server);
  answerExpectations(server);
  // Not a proxy. Node would close the connection without a word.
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => socket.destroy());
    endWithJson(socket, 404, `Cannot CONNECT ${req.url ?? ''}`);
  });
  app.use(checkRequestLine);
}
