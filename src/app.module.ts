import { DynamicModule, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { AuthModule } from './auth/auth.module.js';
import { loggerOptions, personalLogs } from './common/logger.js';
import { appConfig } from './config/app.config.js';
import type { ConfigOf } from './config/config-section.js';
import { ConfigurationModule } from './config/configuration.module.js';
import { httpConfig } from './config/http.config.js';
import { Owns } from './config/owns.decorator.js';
import { CursorsModule } from './cursors/cursors.module.js';
import { DatabaseModule } from './database/database.module.js';
import { DetectorModule } from './detector/detector.module.js';
import { EventsModule } from './events/events.module.js';
import { HealthModule } from './health/health.module.js';
import { HistoryModule } from './history/history.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { NameEventsModule } from './name-events/name-events.module.js';
import { PrivacyModule } from './privacy/privacy.module.js';
import { PublishModule } from './publish/publish.module.js';
import { RateLimitModule } from './rate-limit/rate-limit.module.js';
import { RedisModule } from './redis/redis.module.js';
import { SearchModule } from './search/search.module.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';

/**
 * Every module of the application, one line each. A module brings what it owns with it
 * (`@Owns`: its variables, migrations, OpenAPI tags): listing it here is all it takes.
 */
const FEATURE_MODULES = [
  MetricsModule,
  DatabaseModule,
  CursorsModule,
  RedisModule,
  AuthModule,
  NameEventsModule,
  HealthModule,
  HistoryModule,
  RateLimitModule,
  PublishModule,
  EventsModule,
  DetectorModule,
  PrivacyModule,
  SearchModule,
  WebhooksModule,
];

/**
 * The application. `forRoot(env)` validates the environment of every module first: a bad
 * variable throws a `ConfigurationError` naming it, before anything starts. Tests pass their
 * own `env`.
 */
@Owns({ config: [appConfig, httpConfig] })
@Module({})
export class AppModule {
  static forRoot(env: Record<string, string | undefined> = process.env): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigurationModule.forRoot(env, APPLICATION_MODULES),
        LoggerModule.forRootAsync({
          inject: [appConfig.KEY],
          useFactory: async ({ logLevel, nodeEnv }: ConfigOf<typeof appConfig>) =>
            loggerOptions(logLevel, await personalLogs(nodeEnv)),
        }),
        ...FEATURE_MODULES,
      ],
    };
  }
}

/** The application's own module and every feature module: what `@Owns` is collected from. */
export const APPLICATION_MODULES: readonly unknown[] = [AppModule, ...FEATURE_MODULES];
