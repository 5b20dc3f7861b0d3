/** What CopyIn uses of node-postgres's connection (pg's Connection, untyped there). */
interface CopyConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

const NEEDS_ESCAPE = /[\\\n\r\t]/;

/**
 * One `COPY … FROM STDIN` of rows already in COPY's text format, as a query object that
 * node-postgres runs like its own (`client.query(copy)`: a "submittable", as pg-copy-streams
 * and pg-cursor are): the statement, then the rows as one CopyData and CopyDone once the
 * server is ready for them. `done` settles when the server has answered; `callback` is
 * node-postgres's, set when the client has a query timeout.
 */
export class CopyIn {
  readonly done: Promise<void>;
  callback?: (error: Error | null) => void;
  private resolve!: () => void;
  private reject!: (error: Error) => void;
  private failed = false;

  constructor(
    private readonly text: string,
    private readonly data: Buffer,
  ) {
    this.done = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  submit(connection: CopyConnection): void {
    connection.query(this.text);
  }

  handleCopyInResponse(connection: CopyConnection): void {
    connection.sendCopyFromChunk(this.data);
    connection.endCopyFrom();
  }

  handleCommandComplete(): void {}

  /** From the server (ReadyForQuery follows), the query timeout or a lost connection. */
  handleError(error: Error): void {
    this.failed = true;
    this.callback?.(error);
    this.reject(error);
  }

  handleReadyForQuery(): void {
    if (this.failed) return;
    this.callback?.(null);
    this.resolve();
  }
}

/** Rows in COPY's text format: tab-separated, one a line, \N for null. */
export function copyText(rows: readonly (readonly (string | null)[])[]): Buffer {
  const lines = new Array<string>(rows.length);
  for (let i = 0; i < rows.length; i++) lines[i] = rows[i].map(field).join('\t');
  return Buffer.from(`${lines.join('\n')}\n`, 'utf8');
}

function field(value: string | null): string {
  if (value === null) return '\\N';
  if (!NEEDS_ESCAPE.test(value)) return value;
  return value.replace(/[\\\n\r\t]/g, (c) => ESCAPES[c]);
}

const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
