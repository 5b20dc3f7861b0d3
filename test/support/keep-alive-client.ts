import http from 'node:http';

/** An answer, or why there was none. */
export type Outcome =
  | { status: number; headers: http.IncomingHttpHeaders; body: string; reusedSocket: boolean }
  | { status: undefined; error: string; reusedSocket: boolean };

/**
 * An HTTP/1.1 client on keep-alive connections (node:http's Agent, as most clients and
 * proxies behave), one by default: each request goes on an open connection when there is
 * one, and a new connection is opened only when the server closed the last one. Records, for
 * each failure, whether the request went out on a reused connection: a refused connection
 * never carried a request; a reset one may have.
 */
export class KeepAliveClient {
  private readonly agent: http.Agent;

  constructor(
    private readonly baseUrl: string,
    { connections = 1, localAddress }: { connections?: number; localAddress?: string } = {},
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: connections, localAddress });
  }

  request(
    method: string,
    path: string,
    json?: unknown,
    headers: Record<string, string> = {},
  ): Promise<Outcome> {
    const body = json === undefined ? undefined : JSON.stringify(json);
    return new Promise((resolve) => {
      const req = http.request(
        `${this.baseUrl}${path}`,
        {
          method,
          agent: this.agent,
          headers: {
            ...(body === undefined
              ? {}
              : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) }),
            ...headers,
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: text,
              reusedSocket: req.reusedSocket,
            }),
          );
          res.on('error', (error: NodeJS.ErrnoException) =>
            resolve({
              status: undefined,
              error: error.code ?? error.message,
              reusedSocket: req.reusedSocket,
            }),
          );
        },
      );
      req.on('error', (error: NodeJS.ErrnoException) =>
        resolve({
          status: undefined,
          error: error.code ?? error.message,
          reusedSocket: req.reusedSocket,
        }),
      );
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
