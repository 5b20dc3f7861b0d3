import { DynamicModule, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { LoggerModule } from 'nestjs-pino';
import { loggerOptions, personalLogs } from './common/logger.js';
import { AppConfig, buildConfiguration } from './config/configuration.js';
import { EventsModule } from './events/events.module.js';
import { DatabaseModule } from './database/database.module.js';
import { DetectorModule } from './detector/detector.module.js';
import { HealthModule } from './health/health.module.js';
import { HistoryModule } from './history/history.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { NameEventsModule } from './name-events/name-events.module.js';
import { PrivacyModule } from './privacy/privacy.module.js';
import { PublishModule } from './publish/publish.module.js';
import { RedisModule } from './redis/redis.module.js';

/**
 * The application. `forRoot(env)` validates the environment first: a bad variable throws a
 * `ConfigurationError` naming it, before anything starts. Tests pass their own `env`.
 */
@Module({})
export class AppModule {
  static forRoot(env: Record<string, string | undefined> = process.env): DynamicModule {
    const configuration = buildConfiguration(env);
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot({
          isGlobal: true,
          ignoreEnvFile: true,
          ignoreEnvVars: true,
          skipProcessEnv: true,
          cache: true,
          load: [() => configuration],
        }),
        LoggerModule.forRootAsync({
          inject: [ConfigService],
          useFactory: async (config: ConfigService<AppConfig, true>) => {
            const { logLevel, nodeEnv } = config.get('app', { infer: true });
            return loggerOptions(logLevel, await personalLogs(nodeEnv));
          },
        }),
        MetricsModule,
        DatabaseModule,
        RedisModule,
        NameEventsModule,
        HealthModule,
        HistoryModule,
        PublishModule,
        EventsModule,
        DetectorModule,
        PrivacyModule,
      ],
    };
  }
}
