import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';

/** What Node's HTTP parser rejects, by its error code: status and message. */
const PARSER_ERRORS: Record<string, [number, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'Request line and headers exceed the 16 KiB limit'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'Chunk extensions are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'Request timed out'],
};

/**
 * The error contract for requests that never reach Express: Node answers a request its
 * parser rejects (invalid bytes, a 100 KB URL, a header flood) with a bare 400 or 431, and
 * an HTTP/1.1 request without Host with an empty 400. Here both get `{message, code}`.
 */
export function answerMalformedRequestsWithJson(app: NestExpressApplication): void {
  const server = app.getHttpServer();
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // As Node does: answer only a connection that can still take one and got nothing yet.
    if (!socket.writable || (socket as Duplex & { bytesWritten?: number }).bytesWritten) {
      socket.destroy();
      return;
    }
    const [code, message] = PARSER_ERRORS[error.code ?? ''] ?? [400, 'Malformed HTTP request'];
    const body = JSON.stringify({ message, code });
    socket.end(
      `HTTP/1.1 ${code} ${STATUS_CODES[code]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      () => socket.destroy(),
    );
  });
  // Node's own Host check is off (ExpressHttpAdapter): the same check, with the body.
  app.use(requireHostHeader);
}

function requireHostHeader(req: Request, res: Response, next: NextFunction): void {
  if (req.httpVersion === '1.1' && req.headers.host === undefined) {
    res
      .status(400)
      .set('Connection', 'close')
      .json({ message: 'Host header is required', code: 400 });
    return;
  }
  next();
}
