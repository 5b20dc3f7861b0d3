import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  DatabaseError,
  type ClientBase,
  type QueryConfig,
  type QueryResultRow,
} from 'pg';
import { DataSource } from 'typeorm';

// The parameter format of the statements that send thousands of values.
export { textArray } from './text-array.js';

/** The database could not be reached, or failed a statement it should not have. */
export class StorageUnavailableError extends Error {
  override readonly name = 'StorageUnavailableError';
}

/** What one statement came to. */
export interface SqlResult<T> {
  rows: T[];
  rowCount: number;
}

type Closable = ClientBase & { end(): Promise<void> };

/** A connection held by a unit of work, and what it is doing. */
interface Session {
  client: ClientBase;
  inTransaction: boolean;
  /** Unfit for the pool: it may still hold a session lock, or be mid-transaction. */
  discard: boolean;
}

/**
 * Every statement of the service goes through here, so that repositories need no session
 * passed around: a statement joins the unit of work it runs in (`session`, `transaction`),
 * whoever started it, or takes a pooled connection of its own. The unit of work follows the
 * async call chain (AsyncLocalStorage). Any failure of a statement is a
 * StorageUnavailableError.
 */
@Injectable()
export class SqlService {
  private readonly current = new AsyncLocalStorage<Session>();

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The rows of one statement. */
  async query<T extends QueryResultRow>(query: QueryConfig | string, values?: unknown[]) {
    return (await this.execute<T>(query, values)).rows;
  }

  /** One statement, with its row count (for UPDATE and DELETE). */
  execute<T extends QueryResultRow>(
    query: QueryConfig | string,
    values?: unknown[],
  ): Promise<SqlResult<T>> {
    const config: QueryConfig = typeof query === 'string' ? { text: query, values } : query;
    const session = this.current.getStore();
    if (session) return run(session.client, config);
    return this.withConnection((client) => run(client, config));
  }

  /**
   * Runs `work` on one connection: every statement inside it, from any repository, runs on
   * that connection (what a session-level advisory lock needs). Nested calls join it.
   */
  session<T>(work: () => Promise<T>): Promise<T> {
    if (this.current.getStore()) return work();
    return this.withConnection(async (client) => {
      const session: Session = { client, inTransaction: false, discard: false };
      try {
        return await this.current.run(session, work);
      } catch (error) {
        // A statement that failed may yet run on the server (a lock granted after a timeout).
        if (error instanceof StorageUnavailableError) session.discard = true;
        throw error;
      } finally {
        if (session.discard) await (client as Closable).end().catch(() => undefined);
      }
    });
  }

  /**
   * Runs `work` in one transaction: committed when it resolves, rolled back when it throws.
   * Inside a transaction already, `work` joins it.
   */
  transaction<T>(work: () => Promise<T>): Promise<T> {
    return this.session(async () => {
      const session = this.current.getStore()!;
      if (session.inTransaction) return work();
      await this.execute('BEGIN');
      session.inTransaction = true;
      try {
        const result = await work();
        await this.execute('COMMIT');
        return result;
      } catch (error) {
        await session.client.query('ROLLBACK').catch(() => (session.discard = true));
        throw error;
      } finally {
        session.inTransaction = false;
      }
    });
  }

  /** Marks the current session's connection unfit for reuse: closed instead of pooled. */
  discardSession(): void {
    const session = this.current.getStore();
    if (session) session.discard = true;
  }

  /**
   * Runs `work` outside any unit of work, even when called from inside one: for work that
   * outlives its caller (a loop serving many callers must not run on the first one's session).
   */
  detached<T>(work: () => T): T {
    return this.current.exit(work);
  }

  private async withConnection<T>(work: (client: ClientBase) => Promise<T>): Promise<T> {
    const runner = this.dataSource.createQueryRunner();
    try {
      const client = await storage(() => runner.connect() as Promise<ClientBase>);
      return await work(client);
    } finally {
      await runner.release();
    }
  }
}

async function run<T extends QueryResultRow>(
  client: ClientBase,
  config: QueryConfig,
): Promise<SqlResult<T>> {
  const result = await storage(() => client.query<T>(config));
  return { rows: result.rows, rowCount: result.rowCount ?? 0 };
}

/** Runs a statement; any failure of it means the database is unavailable. */
async function storage<T>(statement: () => Promise<T>): Promise<T> {
  try {
    return await statement();
  } catch (error) {
    if (error instanceof StorageUnavailableError) throw error;
    throw new StorageUnavailableError(messageOf(error));
  }
}

/**
 * The message of a failed statement, for the logs: Postgres' own, with its SQLSTATE. The
 * message of a data exception (class 22) quotes the value it refused (`invalid input syntax
 * for type bigint: "…"`, `date/time field value out of range: "…"`), which may be what a
 * request sent: every quoted span and byte sequence in it is dropped, the rest (what was
 * refused, the type, the code) kept. The other classes quote what the statement itself names
 * (a constraint, a relation), which is the code's: values reach a statement as parameters,
 * which only a data exception quotes. A detail (`Key (id)=(…)`) is not kept.
 */
function messageOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (!(error instanceof DatabaseError) || typeof error.code !== 'string') return message;
  const shown = error.code.startsWith('22') ? withoutValues(message) : message;
  return `${shown} (SQLSTATE ${error.code})`;
}

/**
 * `text` with what lies between its first and last double quote, and any byte sequence
 * (`0xe2 0x82`), replaced: a value Postgres quotes may itself hold quotes.
 */
function withoutValues(text: string): string {
  return text.replace(/"[\s\S]*"/, '"…"').replace(/0x[0-9a-f]+(?:\s+0x[0-9a-f]+)*/gi, '0x…');
}
