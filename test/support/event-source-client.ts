import http from 'node:http';

export interface ReceivedEvent {
  id: string;
  data: string;
}

/**
 * A listener that behaves as a browser's EventSource (WHATWG HTML, "Server-sent events"):
 * it keeps the last event id (an `id:` line with no data included), takes the reconnection
 * time from `retry:`, reconnects after it, with `Last-Event-ID`, when the stream ends or the
 * connection fails, and gives up for good on a non-200 answer or another content type
 * (a browser fires `error` and closes: that client is lost). With `retryAfterErrors`, it
 * tries again after a non-200 too, as the live page does on top of its EventSource.
 */
export class EventSourceClient {
  readonly events: ReceivedEvent[] = [];
  /** Every answer to a connection attempt: a status, or the network error. */
  readonly attempts: (number | string)[] = [];
  /** Set when the client gave up: the status and body it got. */
  lost?: { status: number; body: string };
  /** The longest time, in ms, from the end of a stream to the next stream open. */
  longestGap = 0;
  connected = false;

  private lastEventId = '';
  private reconnectionTime = 3_000;
  private closed = false;
  private request?: http.ClientRequest;
  private timer?: NodeJS.Timeout;
  private disconnectedAt?: number;

  constructor(
    private readonly url: string,
    private readonly options: { retryAfterErrors?: boolean } = {},
  ) {}

  open(): void {
    if (this.closed) return;
    const headers: Record<string, string> = {
      Accept: 'text/event-stream',
      'Cache-Control': 'no-cache',
    };
    if (this.lastEventId !== '') headers['Last-Event-ID'] = this.lastEventId;
    const request = http.get(this.url, { headers, agent: false });
    this.request = request;
    request.once('response', (res) => {
      const type = res.headers['content-type'] ?? '';
      if (res.statusCode !== 200 || !type.startsWith('text/event-stream')) {
        this.attempts.push(res.statusCode ?? 0);
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        if (this.options.retryAfterErrors) {
          res.resume();
          this.reconnect();
          return;
        }
        res.on('end', () => (this.lost = { status: res.statusCode ?? 0, body }));
        this.closed = true;
        return;
      }
      this.attempts.push(200);
      this.connected = true;
      if (this.disconnectedAt !== undefined) {
        this.longestGap = Math.max(this.longestGap, Date.now() - this.disconnectedAt);
        this.disconnectedAt = undefined;
      }
      this.read(request, res);
    });
    request.once('error', (error: NodeJS.ErrnoException) => {
      if (this.request !== request) return;
      if (!this.connected) this.attempts.push(error.code ?? error.message);
      this.reconnect();
    });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.request?.destroy();
  }

  private read(request: http.ClientRequest, res: http.IncomingMessage): void {
    let buffer = '';
    let data: string[] = [];
    let idBuffer = this.lastEventId;
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffer += chunk;
      let end: number;
      while ((end = buffer.search(/\r\n|\r|\n/)) !== -1) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
        if (line === '') {
          // Dispatch: the id sticks even when there is no data.
          this.lastEventId = idBuffer;
          if (data.length > 0) this.events.push({ id: this.lastEventId, data: data.join('\n') });
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') data.push(value);
        else if (field === 'id' && !value.includes('\0')) idBuffer = value;
        else if (field === 'retry' && /^\d+$/.test(value)) this.reconnectionTime = Number(value);
      }
    });
    res.once('close', () => {
      if (this.request === request) this.reconnect();
    });
  }

  private reconnect(): void {
    if (this.closed || this.timer) return;
    this.connected = false;
    this.disconnectedAt ??= Date.now();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.open();
    }, this.reconnectionTime);
  }
}
