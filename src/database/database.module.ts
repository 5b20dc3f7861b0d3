import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Module, OnApplicationShutdown } from '@nestjs/common';
import {
  getDataSourceToken,
  InjectDataSource,
  TypeOrmModule,
  type TypeOrmModuleOptions,
} from '@nestjs/typeorm';
import { ClsModule } from 'nestjs-cls';
import type { ConfigOf } from '../config/config-section.js';
import { OWNED_BY_MODULES } from '../config/configuration.module.js';
import { Owns, type Owned } from '../config/owns.decorator.js';
import { AppDataSource } from './app-data-source.js';
import { databaseConfig } from './database.config.js';
import { PostgresNotificationsService } from './postgres-notifications.service.js';
import { postgresOptions, type PostgresConnectionOptions } from './postgres-options.js';

type DataSourceOptions = PostgresConnectionOptions &
  Pick<TypeOrmModuleOptions, 'manualInitialization' | 'toRetry'> & { embeddedDataDir?: string };

/**
 * Postgres through TypeORM: the server at `DATABASE_URL`, or the embedded PGlite under
 * `DATA_DIR` when it is unset. Every module's migrations (see `@Owns`) run at start-up, in
 * timestamp order, under an advisory lock. Repositories run their statements through
 * `TransactionHost<TransactionalAdapterTypeOrm>` (`tx.query`), which joins the transaction
 * under way (`withTransaction`, nestjs-cls); a failed statement is a StorageUnavailableError
 * (AppDataSource). `PostgresNotificationsService` hears the channels a module watches.
 */
@Owns({ config: [databaseConfig] })
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [databaseConfig.KEY, OWNED_BY_MODULES],
      useFactory: (
        db: ConfigOf<typeof databaseConfig>,
        { entities, migrations }: Required<Owned>,
      ): DataSourceOptions => ({
        ...postgresOptions({
          url: db.url,
          poolSize: db.poolSize,
          entities: [...entities],
          migrations: [...migrations],
        }),
        // AppDataSource.open() retries Postgres by itself; what it throws (the embedded
        // database failing, its DATA_DIR in use) does not get better by trying again.
        toRetry: () => false,
        // AppDataSource connects by itself, and keeps trying while Postgres is down.
        manualInitialization: true,
        embeddedDataDir: db.url ? undefined : db.dataDir,
      }),
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
    // The plugin alone: ClsModule.forRoot would add a global guard and interceptor to every
    // route, and an interceptor turns the stream's setup into an Observable that Nest answers
    // 200 for before the setup can fail with its 500.
    ClsModule.registerPlugins([
      new ClsPluginTransactional({
        adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: getDataSourceToken() }),
      }),
    ]),
  ],
  providers: [PostgresNotificationsService],
  exports: [PostgresNotificationsService],
})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(@InjectDataSource() private readonly dataSource: AppDataSource) {}

  /** Also when Postgres never came up: the reconnect loop must stop with the application. */
  async onApplicationShutdown(): Promise<void> {
    await this.dataSource.destroy();
  }
}
