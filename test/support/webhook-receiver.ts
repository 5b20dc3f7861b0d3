import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One request a receiver got. */
export interface Received {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** Parsed JSON. */
  json: unknown;
}

/**
 * How the receiver answers a request: a status (and headers, a body), not at all, or an
 * endless body; or any of these once a promise settles (a request held until the test says).
 */
export type Answer =
  { status: number; headers?: Record<string, string>; body?: string } | 'hang' | 'endless';

/**
 * A webhook receiver on loopback (node:http): records every request and answers as
 * `answer` says, 204 by default. Closed with `close()` (connections included).
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  answer: (request: Received, index: number) => Answer | Promise<Answer> = () => ({
    status: 204,
  });
  private readonly sockets = new Set<Socket>();
  private readonly hanging = new Set<ServerResponse>();

  private constructor(private readonly server: Server) {}

  static async start(): Promise<WebhookReceiver> {
    const server = createServer();
    const receiver = new WebhookReceiver(server);
    server.on('connection', (socket) => {
      receiver.sockets.add(socket);
      socket.once('close', () => receiver.sockets.delete(socket));
    });
    server.on('request', (req, res) => receiver.handle(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  /** The bodies' `data` (standard format), in the order received. */
  get data(): {
    id: string;
    userId: string;
    type: 'username' | 'displayname';
    name: string;
    changedAt: string;
  }[] {
    return this.received.map((r) => (r.json as { data: never }).data);
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const headers = Object.fromEntries(
        Object.entries(req.headers).map(([k, v]) => [k, String(v)]),
      );
      const received = { method: req.method!, path: req.url!, headers, body, json };
      const index = this.received.push(received) - 1;
      void Promise.resolve(this.answer(received, index)).then((answer) => this.reply(res, answer));
    });
  }

  private reply(res: ServerResponse, answer: Answer): void {
    if (answer === 'hang') {
      this.hanging.add(res);
      return;
    }
    if (answer === 'endless') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const pump = () => {
        while (res.write(chunk));
      };
      res.on('drain', pump);
      pump();
      return;
    }
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  }
}
