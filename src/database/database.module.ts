import { Module, OnApplicationShutdown } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { TerminusModule } from '@nestjs/terminus';
import { InjectDataSource, TypeOrmModule, type TypeOrmModuleOptions } from '@nestjs/typeorm';
import type { AppConfig } from '../config/configuration.js';
import { AppDataSource } from './app-data-source.js';
import { DatabaseHealthIndicator } from './database.health.js';
import { postgresOptions, type PostgresConnectionOptions } from './postgres-options.js';

type DataSourceOptions = PostgresConnectionOptions &
  Pick<TypeOrmModuleOptions, 'manualInitialization' | 'toRetry'> & { embeddedDataDir?: string };

/**
 * Postgres through TypeORM: the server at `DATABASE_URL`, or the embedded PGlite under
 * `DATA_DIR` when it is unset. Migrations run at start-up under an advisory lock.
 */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [ConfigService],
      useFactory: (config: ConfigService<AppConfig, true>): DataSourceOptions => {
        const db = config.get('database', { infer: true });
        return {
          ...postgresOptions({ url: db.url, poolSize: db.poolSize }),
          // AppDataSource.open() retries Postgres by itself; what it throws (the embedded
          // database failing, its DATA_DIR in use) does not get better by trying again.
          toRetry: () => false,
          // AppDataSource connects by itself, and keeps trying while Postgres is down.
          manualInitialization: true,
          embeddedDataDir: db.url ? undefined : db.dataDir,
        };
      },
      dataSourceFactory: async (options) => {
        const {
          embeddedDataDir,
          manualInitialization: _,
          toRetry: __,
          ...postgres
        } = options as DataSourceOptions;
        return AppDataSource.open(postgres, embeddedDataDir);
      },
    }),
    TerminusModule,
  ],
  providers: [DatabaseHealthIndicator],
  exports: [DatabaseHealthIndicator],
})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(@InjectDataSource() private readonly dataSource: AppDataSource) {}

  /** Also when Postgres never came up: the reconnect loop must stop with the application. */
  async onApplicationShutdown(): Promise<void> {
    await this.dataSource.destroy();
  }
}
