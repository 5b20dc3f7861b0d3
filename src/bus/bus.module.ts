import { Logger, Module } from '@nestjs/common';
import { RedisConnections, RedisModule } from '../redis/index.js';
import { BusMetrics } from './bus.metrics.js';
import { InProcessNameEventBus } from './in-process-name-event.bus.js';
import { NameEventBus } from './name-event-bus.js';
import { RedisNameEventBus } from './redis-name-event.bus.js';
import { ShardedRedisNameEventBus } from './sharded-redis-name-event.bus.js';

/**
 * The name-event bus: Redis pub/sub between instances when Redis is configured (sharded
 * pub/sub on a cluster), in-process
 * for the single instance of the embedded default. The name-event domain publishes on it and
 * opens streams from it.
 */
@Module({
  imports: [RedisModule],
  providers: [
    BusMetrics,
    {
      provide: NameEventBus,
      inject: [RedisConnections, BusMetrics],
      useFactory: (redis: RedisConnections, metrics: BusMetrics): NameEventBus => {
        const logger = new Logger('BusModule');
        if (!redis.enabled) {
          logger.log('Event bus: in-process (single instance; set REDIS_URL for several)');
          return new InProcessNameEventBus();
        }
        if (redis.isCluster) {
          logger.log(
            `Event bus: Redis sharded pub/sub on ${redis.slotKey('name-events')} (${redis.description})`,
          );
          return new ShardedRedisNameEventBus(redis, metrics);
        }
        logger.log(
          `Event bus: Redis pub/sub on ${redis.key('name-events')} (${redis.description})`,
        );
        return new RedisNameEventBus(redis, metrics);
      },
    },
  ],
  exports: [NameEventBus],
})
export class BusModule {}
