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

/**
 * Rows in COPY's text format, from their columns (each one value a row): tab-separated, one a
 * line, \N for null. Written straight into the buffer sent, measured first: a batch of
 * thousands of rows makes no string, nor array, for each row.
 */
export function copyText(columns: readonly (readonly (string | null)[])[]): Buffer {
  const width = columns.length;
  const rows = width === 0 ? 0 : columns[0].length;
  let size = 0;
  for (const column of columns) {
    for (const value of column) size += Buffer.byteLength(field(value)) + 1;
  }
  const text = Buffer.allocUnsafe(size);
  let at = 0;
  for (let row = 0; row < rows; row++) {
    for (let column = 0; column < width; column++) {
      at += text.write(field(columns[column][row]), at);
      text[at++] = column === width - 1 ? NEWLINE : TAB;
    }
  }
  return text;
}

const TAB = 0x09;
const NEWLINE = 0x0a;

function field(value: string | null): string {
  if (value === null) return '\\N';
  if (!NEEDS_ESCAPE.test(value)) return value;
  return value.replace(/[\\\n\r\t]/g, (c) => ESCAPES[c]);
}

const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
