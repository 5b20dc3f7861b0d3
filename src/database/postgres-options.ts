import type { DataSourceOptions } from 'typeorm';

export type PostgresConnectionOptions = Extract<DataSourceOptions, { type: 'postgres' }>;

/** Bounds every statement, so a hung database turns into an error rather than a hung request. */
const STATEMENT_TIMEOUT_MS = 10_000;

/**
 * The options every data source of the service shares: the app's and the CLI's. `entities`
 * and `migrations` are those every module owns (see `@Owns`).
 */
export function postgresOptions({
  poolSize = 10,
  ...rest
}: Partial<PostgresConnectionOptions> & { poolSize?: number }): PostgresConnectionOptions {
  return {
    type: 'postgres',
    synchronize: false,
    migrationsRun: false,
    // Each migration in a transaction of its own, unless it opts out (an index built
    // CONCURRENTLY cannot be): the CLI then runs them as the application does.
    migrationsTransactionMode: 'each',
    logging: false,
    ...rest,
    extra: {
      max: poolSize,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      statement_timeout: STATEMENT_TIMEOUT_MS,
      query_timeout: STATEMENT_TIMEOUT_MS + 1_000,
    },
  };
}
