import { Module, OnApplicationShutdown } from '@nestjs/common';
import type { ConfigOf } from '../config/config-section.js';
import { Owns } from '../config/owns.decorator.js';
import { RedisConnections } from '../redis/redis-connections.js';
import { RedisModule } from '../redis/redis.module.js';
import { PublishRateLimitGuard } from './publish-rate-limit.guard.js';
import { MemoryRateLimitStore, RateLimitStore } from './rate-limit.store.js';
import { rateLimitConfig } from './rate-limit.config.js';
import { RedisRateLimitStore } from './redis-rate-limit.store.js';

/** The publish rate limit: its guard, and a store in Redis when configured, else in memory. */
@Owns({ config: [rateLimitConfig] })
@Module({
  imports: [RedisModule],
  providers: [
    {
      provide: RateLimitStore,
      inject: [rateLimitConfig.KEY, RedisConnections],
      useFactory: (
        { limit }: ConfigOf<typeof rateLimitConfig>,
        redis: RedisConnections,
      ): RateLimitStore =>
        // No limit, no connection to hold.
        redis.enabled && limit > 0
          ? new RedisRateLimitStore(redis.create('rate-limit'), redis.key('rate-limit'))
          : new MemoryRateLimitStore(),
    },
    PublishRateLimitGuard,
  ],
  exports: [PublishRateLimitGuard, RateLimitStore],
})
export class RateLimitModule implements OnApplicationShutdown {
  constructor(private readonly store: RateLimitStore) {}

  onApplicationShutdown(): void {
    if (this.store instanceof MemoryRateLimitStore) this.store.stop();
  }
}
