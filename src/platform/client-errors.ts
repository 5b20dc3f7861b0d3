import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  endWithJson,
  HEAD_TOO_LARGE_MESSAGE,
  MALFORMED_REQUEST_MESSAGE,
  REQUEST_TIMEOUT_MESSAGE,
  VERSION_NOT_SUPPORTED_MESSAGE,
} from './http-answers.js';
import { statusOfRefusedVersion } from './request-line.js';

/** What Node's HTTP parser refuses, by its error code: status and message (400 otherwise). */
const PARSER_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, HEAD_TOO_LARGE_MESSAGE],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'Chunk extensions are too large'],
  // The whole HTTP/2 connection preface ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", nothing else
  // raises it): a client speaking HTTP/2 without TLS.
  HPE_PAUSED_H2_UPGRADE: [505, VERSION_NOT_SUPPORTED_MESSAGE],
  ERR_HTTP_REQUEST_TIMEOUT: [408, REQUEST_TIMEOUT_MESSAGE],
};

/** The answer to a request the parser refused. */
function answerFor(error: ClientError): [number, string] {
  if (error.code === 'HPE_INVALID_VERSION') {
    // The same code for a version this service does not speak and for a garbled line.
    return statusOfRefusedVersion(error.rawPacket, error.bytesParsed) === 505
      ? [505, VERSION_NOT_SUPPORTED_MESSAGE]
      : [400, MALFORMED_REQUEST_MESSAGE];
  }
  return PARSER_ERRORS[error.code ?? ''] ?? [400, MALFORMED_REQUEST_MESSAGE];
}

/** A `clientError`'s error: Node adds the chunk being parsed and how much of it was. */
interface ClientError extends NodeJS.ErrnoException {
  rawPacket?: Buffer;
  bytesParsed?: number;
}

/**
 * Answers every request Node's parser refuses (invalid bytes, an oversized head, a version
 * it does not take, a request that times out) with the error contract's body, where Node
 * would answer a bare status or close the connection. Each connection gets one answer, in
 * its turn: an error in a request that follows another on a kept-alive connection is
 * answered after the first one's answer.
 */
export function answerClientErrors(server: Server): void {
  /** The response in progress on each connection, to tell whether an error can still be answered. */
  const responses = new WeakMap<Duplex, ServerResponse>();
  /** Connections whose next request the parser refused: they get one answer, then close. */
  const refused = new WeakSet<Duplex>();

  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    responses.set(req.socket, res);
  });

  server.on('clientError', (error: ClientError, socket: Duplex) => {
    // Node reports each further chunk of a connection it gave up on again: one answer only.
    if (refused.has(socket)) return;
    refused.add(socket);
    const [code, message] = answerFor(error);
    const response = responses.get(socket);
    if (!response || response.writableFinished) {
      endWithJson(socket, code, message);
    } else if (!response.req.complete) {
      // The request being answered is the one at fault (a body that never came): answer it,
      // unless its answer has begun, whose bytes the error would corrupt.
      if (response.headersSent) socket.destroy();
      else endWithJson(socket, code, message);
    } else {
      // A request after the one being answered is at fault: its answer follows that one.
      response.once('finish', () => endWithJson(socket, code, message));
      response.once('close', () => {
        if (!response.writableFinished) socket.destroy();
      });
    }
  });
}
