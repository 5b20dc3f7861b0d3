import { Logger } from '@nestjs/common';
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  DataSource,
  type EntityManager,
  type Migration,
  type ObjectLiteral,
  type QueryRunner,
} from 'typeorm';
import type { ClientBase } from 'pg';
import type { IsolationLevel } from 'typeorm/driver/types/IsolationLevel.js';
import type { PostgresConnectionOptions } from './postgres-options.js';
import { describeUrl } from '../common/logger.js';
import { EmbeddedPostgres } from './embedded-postgres.js';
import { runMigrationsApart, runMigrationsUnderLock } from './migrate.js';
import { StorageUnavailableError, storageUnavailable } from './database.types.js';

const RECONNECT_DELAY_MS = 2_000;

/**
 * The application's data source. It starts even when Postgres is unreachable, so that the
 * service can answer (500 for what needs the database, 503 from readiness) and recover by
 * itself: it keeps trying to connect in the background, then runs the migrations.
 * With no `DATABASE_URL` it owns the embedded PGlite server and stops it last.
 *
 * Every statement and transaction goes through `query` and `transaction` (TransactionHost's
 * too), where a failure of the database becomes a StorageUnavailableError, and where a
 * session (`runSession`) puts them on its connection.
 */
export class AppDataSource extends DataSource {
  private readonly log = new Logger('Database');
  /** The connection of the session under way (`runSession`), if any. */
  private readonly sessions = new AsyncLocalStorage<QueryRunner>();
  private retryTimer?: NodeJS.Timeout;
  private stopped = false;
  private migrated = false;
  private connecting?: Promise<void>;
  private destroying?: Promise<void>;

  constructor(
    options: PostgresConnectionOptions,
    private readonly embedded?: EmbeddedPostgres,
  ) {
    super(options);
  }

  static async open(options: PostgresConnectionOptions, embeddedDataDir?: string) {
    const embedded =
      embeddedDataDir === undefined ? undefined : await EmbeddedPostgres.start(embeddedDataDir);
    const extra = { ...(options.extra as Record<string, unknown> | undefined), max: 1 };
    const dataSource = new AppDataSource(
      embedded ? { ...options, ...embedded.connection, url: undefined, extra } : options,
      embedded,
    );
    dataSource.log.log(
      embedded
        ? `Using the embedded PGlite database in ${embedded.dataDir}`
        : `Using PostgreSQL at ${describeUrl(options.url!)}`,
    );
    await dataSource.connectAndMigrate();
    return dataSource;
  }

  override async query<T = unknown>(
    query: string,
    parameters?: unknown[] | ObjectLiteral,
    queryRunner?: QueryRunner,
  ): Promise<T> {
    try {
      return await super.query<T>(query, parameters, queryRunner ?? this.sessions.getStore());
    } catch (error) {
      throw storageUnavailable(error);
    }
  }

  override async transaction<T>(
    isolationOrWork: IsolationLevel | ((manager: EntityManager) => Promise<T>),
    maybeWork?: (manager: EntityManager) => Promise<T>,
  ): Promise<T> {
    const work = typeof isolationOrWork === 'function' ? isolationOrWork : maybeWork!;
    // TypeORM's own transaction() takes an undefined isolation as none.
    const isolation = (typeof isolationOrWork === 'function' ? undefined : isolationOrWork)!;
    const manager = this.sessions.getStore()?.manager ?? this.manager;
    // What `work` throws is its own; what BEGIN, COMMIT or the connection throw is storage's.
    let failed: { error: unknown } | undefined;
    const guarded = (inside: EntityManager) =>
      work(inside).catch((error: unknown) => {
        failed = { error };
        throw error;
      });
    try {
      return await manager.transaction(isolation, guarded);
    } catch (error) {
      if (failed) throw failed.error;
      throw storageUnavailable(error);
    }
  }

  /**
   * Runs `work` on one connection of its own: every statement and transaction inside it, from
   * any repository, runs on that connection (what a session-level advisory lock needs, held
   * across a commit). Nested calls join it. A session whose statement failed is closed rather
   * than pooled again: the statement may yet run on the server (a lock granted after a
   * timeout).
   */
  async runSession<T>(work: () => Promise<T>): Promise<T> {
    if (this.sessions.getStore()) return work();
    const runner = this.createQueryRunner();
    try {
      await runner.connect().catch((error: unknown) => {
        throw storageUnavailable(error);
      });
      return await this.sessions.run(runner, () =>
        work().catch(async (error: unknown) => {
          if (error instanceof StorageUnavailableError) await this.closeSession();
          throw error;
        }),
      );
    } finally {
      await runner.release();
    }
  }

  /**
   * Closes the connection of the session under way rather than pooling it again: whatever
   * it holds (a session lock) goes with it.
   */
  async closeSession(): Promise<void> {
    const client = (await this.sessions.getStore()?.connect()) as
      (ClientBase & { end(): Promise<void> }) | undefined;
    await client?.end().catch(() => undefined);
  }

  /** True once connected and migrated: the schema is there to be queried. */
  get isReady(): boolean {
    return this.isInitialized && this.migrated;
  }

  private async connectAndMigrate(): Promise<void> {
    try {
      await this.initializeAndMigrate();
    } catch (error) {
      if (this.embedded) throw error;
      this.log.error(
        `PostgreSQL is not reachable (${(error as Error).message}); retrying every ${RECONNECT_DELAY_MS} ms`,
      );
      this.scheduleRetry();
    }
  }

  private initializeAndMigrate(): Promise<void> {
    this.connecting = this.connectOnce().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async connectOnce(): Promise<void> {
    let applied: Migration[];
    if (this.embedded) {
      // PGlite takes one connection at a time: its migrations run on the pool's one.
      if (!this.isInitialized) await this.initialize();
      applied = await runMigrationsUnderLock(this);
    } else {
      // On a connection of their own, without the requests' statement timeouts.
      applied = await runMigrationsApart(this.options as PostgresConnectionOptions);
      if (!this.isInitialized) await this.initialize();
    }
    this.migrated = true;
    for (const migration of applied) this.log.log(`Applied migration ${migration.name}`);
  }

  private scheduleRetry(): void {
    if (this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.initializeAndMigrate().then(
        () => this.log.log('Connected to PostgreSQL'),
        () => this.scheduleRetry(),
      );
    }, RECONNECT_DELAY_MS);
    this.retryTimer.unref();
  }

  /**
   * Stops reconnecting, closes the pool, then the embedded server. Idempotent: TypeORM calls
   * it only for an initialized data source, so DatabaseModule calls it too, at shutdown.
   */
  override destroy(): Promise<void> {
    this.destroying ??= this.close();
    return this.destroying;
  }

  private async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    // An attempt under way would leave its pool behind: let it settle first.
    await this.connecting?.catch(() => undefined);
    if (this.isInitialized) await super.destroy();
    await this.embedded?.stop();
  }
}
