import net from 'node:net';

export interface RawResponse {
  /** 0 when the server closed the connection without a status line. */
  status: number;
  headers: Record<string, string>;
  body: string;
  raw: Buffer;
}

/**
 * Sends `request` byte for byte over a fresh loopback connection and reads the answer until
 * the server closes the connection or the body's Content-Length is in. For requests no HTTP
 * client would send: malformed request lines, invalid bytes, huge heads.
 */
export function rawRequest(
  port: number,
  request: string | Buffer,
  timeoutMs = 10_000,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    const chunks: Buffer[] = [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(parseResponse(Buffer.concat(chunks)));
    };
    const timer = setTimeout(() => {
      done = true;
      socket.destroy();
      reject(
        new Error(`No complete answer within ${timeoutMs} ms: ${Buffer.concat(chunks).toString()}`),
      );
    }, timeoutMs);
    socket.on('connect', () => {
      // The server may answer (and close) before it has read a large request: a write
      // error then is expected, and the answer is what counts.
      socket.write(request, () => undefined);
    });
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (isComplete(Buffer.concat(chunks))) finish();
    });
    socket.on('error', () => finish());
    socket.on('close', finish);
  });
}

function isComplete(raw: Buffer): boolean {
  const end = raw.indexOf('\r\n\r\n');
  if (end === -1) return false;
  const length = /\r\ncontent-length: *(\d+)/i.exec(raw.subarray(0, end).toString('latin1'));
  return length !== null && raw.length - (end + 4) >= Number(length[1]);
}

export function parseResponse(raw: Buffer): RawResponse {
  const end = raw.indexOf('\r\n\r\n');
  if (end === -1) return { status: 0, headers: {}, body: raw.toString('utf8'), raw };
  const [statusLine, ...lines] = raw.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
  let body = raw.subarray(end + 4);
  if (headers['transfer-encoding'] === 'chunked') body = dechunk(body);
  return { status, headers, body: body.toString('utf8'), raw };
}

function dechunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset < body.length) {
    const lineEnd = body.indexOf('\r\n', offset);
    if (lineEnd === -1) break;
    const size = parseInt(body.subarray(offset, lineEnd).toString('latin1'), 16);
    if (!size) break;
    parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/**
 * A conversation on one loopback connection: writes the first chunk, then each next one once
 * `when` finds what it waits for in the bytes received so far (e.g. `100 Continue`), and
 * reads until the server closes the connection. For the answers Node's HTTP layer gives:
 * timeouts, interim responses, several answers on one connection.
 */
export function rawExchange(
  port: number,
  steps: { send: string | Buffer; when?: (received: string) => boolean }[],
  timeoutMs = 15_000,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    const chunks: Buffer[] = [];
    let next = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(
          `The server did not close within ${timeoutMs} ms: ${Buffer.concat(chunks).toString()}`,
        ),
      );
    }, timeoutMs);
    const advance = () => {
      const received = Buffer.concat(chunks).toString('latin1');
      while (next < steps.length && (steps[next].when?.(received) ?? true)) {
        socket.write(steps[next++].send, () => undefined);
      }
    };
    socket.on('connect', advance);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      advance();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
  });
}
