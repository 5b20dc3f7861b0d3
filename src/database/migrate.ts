import { Logger } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';
import { DataSource, Migration, MigrationExecutor, type QueryRunner } from 'typeorm';
import type { PostgresConnectionOptions } from './postgres-options.js';

/** Any fixed number, the same in every instance: "pgmigrat" in ASCII. */
const MIGRATION_LOCK_KEY = '8101225016484541556';

/** How often an instance that waits for another one's migrations asks again. */
const LOCK_POLL_MS = 250;

/**
 * Runs pending migrations while holding a Postgres advisory lock, so that instances started
 * at the same time take turns and each migration runs exactly once. The lock and the
 * migrations share one connection, which also suits a pool of one (PGlite).
 *
 * The others wait by trying the lock again and again (`pg_try_advisory_lock`), never in a
 * blocking `pg_advisory_lock`: a waiting statement holds a snapshot, and a migration that
 * builds an index CONCURRENTLY waits for every older snapshot to go, so a blocked waiter and
 * the holder would wait for each other forever.
 */
export async function runMigrationsUnderLock(dataSource: DataSource): Promise<Migration[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await takeMigrationLock(runner);
    try {
      const executor = new MigrationExecutor(dataSource, runner);
      executor.transaction = 'each';
      return await executor.executePendingMigrations();
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await runner.release();
  }
}

/**
 * `runMigrationsUnderLock` on a data source of its own: one connection, without the statement
 * timeouts of the application's pool, neither Postgres's nor the client's. A migration may
 * take long (an index built over a large table): cut short, it would be tried again at every
 * start and never finish. Closed before it returns.
 */
export async function runMigrationsApart(options: PostgresConnectionOptions): Promise<Migration[]> {
  const extra = options.extra as Record<string, unknown> | undefined;
  const dataSource = new DataSource({
    ...options,
    extra: { ...extra, max: 1, statement_timeout: undefined, query_timeout: undefined },
  });
  await dataSource.initialize();
  try {
    return await runMigrationsUnderLock(dataSource);
  } finally {
    await dataSource.destroy();
  }
}

async function takeMigrationLock(runner: QueryRunner): Promise<void> {
  let waiting = false;
  for (;;) {
    const [{ locked }] = (await runner.query('SELECT pg_try_advisory_lock($1) AS locked', [
      MIGRATION_LOCK_KEY,
    ])) as { locked: boolean }[];
    if (locked) return;
    if (!waiting) new Logger('Database').log('Waiting for another instance to finish migrating');
    waiting = true;
    await delay(LOCK_POLL_MS);
  }
}
