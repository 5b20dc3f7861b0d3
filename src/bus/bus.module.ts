import { Logger, Module } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { TerminusModule } from '@nestjs/terminus';
import type { AppConfig } from '../config/configuration.js';
import { BusHealthIndicator } from './bus.health.js';
import { InProcessNameEventBus } from './in-process-name-event.bus.js';
import { NameEventBus } from './name-event-bus.js';
import { RedisNameEventBus } from './redis-name-event.bus.js';

/**
 * The name-event bus, chosen by REDIS_URL: Redis pub/sub between instances, or in-process
 * for the single instance of the embedded default. Publish and Events share it.
 */
@Module({
  imports: [TerminusModule],
  providers: [
    BusHealthIndicator,
    {
      provide: NameEventBus,
      inject: [ConfigService],
      useFactory: (config: ConfigService<AppConfig, true>): NameEventBus => {
        const { url, keyPrefix } = config.get('redis', { infer: true });
        const logger = new Logger('BusModule');
        if (!url) {
          logger.log('Event bus: in-process (single instance; set REDIS_URL for several)');
          return new InProcessNameEventBus();
        }
        logger.log(`Event bus: Redis pub/sub on channel ${keyPrefix}:name-events`);
        return new RedisNameEventBus(url, `${keyPrefix}:name-events`);
      },
    },
  ],
  exports: [NameEventBus, BusHealthIndicator],
})
export class BusModule {}
