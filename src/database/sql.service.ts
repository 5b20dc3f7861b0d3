import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { QueryConfig, QueryResultRow } from 'pg';

/**
 * A thin facade kept for the webhook repositories only, until they run their statements as
 * every other repository does (`TransactionHost<TransactionalAdapterTypeOrm>`, `tx.query`):
 * a statement joins the transaction it runs in, or the session (AppDataSource.session). A
 * statement's name is dropped: TypeORM sends none.
 */
@Injectable()
export class SqlService {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** The rows of one statement. */
  query<T extends QueryResultRow>(query: QueryConfig | string, values?: unknown[]): Promise<T[]> {
    const { text, values: parameters } =
      typeof query === 'string' ? { text: query, values } : query;
    return this.txHost.tx.query<T[]>(text, parameters);
  }

  /** One UPDATE or DELETE, with its row count. */
  async execute(query: string, values?: unknown[]): Promise<{ rowCount: number }> {
    const [, rowCount] = await this.txHost.tx.query<[unknown, number]>(query, values);
    return { rowCount };
  }
}
