import type { Pool, PoolClient } from 'pg';
import type { DataSource } from 'typeorm';

/** The database could not be reached, or failed a statement it should not have. */
export class StorageUnavailableError extends Error {
  override readonly name = 'StorageUnavailableError';
}

const guardedPools = new WeakSet<Pool>();

/**
 * The `pg` pool under TypeORM, for the few paths that need a session of their own (an
 * advisory lock held across statements) and must destroy it rather than return it to
 * the pool when something goes wrong.
 */
export function pgPool(dataSource: DataSource): Pool {
  const pool = (dataSource.driver as unknown as { master?: Pool }).master;
  if (!dataSource.isInitialized || !pool) {
    throw new StorageUnavailableError('The database is not connected');
  }
  if (!guardedPools.has(pool)) {
    guardedPools.add(pool);
    pool.on('acquire', guardCheckedOutClient);
  }
  return pool;
}

/**
 * A connection that drops emits 'error' on its client besides failing the query under way.
 * The pool listens only while a client is idle, and TypeORM only on the clients it checks
 * out itself: on one checked out here, an unheard 'error' would crash the process. The
 * failing query already reports the error, so the event is only acknowledged.
 */
function guardCheckedOutClient(client: PoolClient): void {
  if (!client.listeners('error').includes(ignoreClientError)) client.on('error', ignoreClientError);
}

function ignoreClientError(): void {}
