import { DataSource, Migration, MigrationExecutor } from 'typeorm';

/** Any fixed number, the same in every instance: "pgmigrat" in ASCII. */
const MIGRATION_LOCK_KEY = '8101225016484541556';

/**
 * Runs pending migrations while holding a Postgres advisory lock, so that instances
 * started at the same time take turns and each migration runs exactly once. The lock
 * and the migrations share one connection, which also suits a pool of one (PGlite).
 */
export async function runMigrationsUnderLock(dataSource: DataSource): Promise<Migration[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
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
