import { Module, OnApplicationShutdown } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { RedisConnections } from '../redis/redis-connections.js';
import { RedisModule } from '../redis/redis.module.js';
import { PublishRateLimitGuard } from './publish-rate-limit.guard.js';
import { MemoryRateLimitStore, RateLimitStore } from './rate-limit.store.js';
import { rateLimitConfig } from './rate-limit.config.js';
import { RateLimiter } from './rate-limiter.service.js';
import { RedisRateLimitStore } from './redis-rate-limit.store.js';

/**
 * The rate limit: `RateLimiter` for any module's budget (the publish one's guard is here), and
 * its store, in Redis when configured (connected at the first counted request), else in memory.
 */
@Owns({ config: [rateLimitConfig] })
@Module({
  imports: [RedisModule],
  providers: [
    {
      provide: RateLimitStore,
      inject: [RedisConnections],
      useFactory: (redis: RedisConnections): RateLimitStore =>
        redis.enabled
          ? new RedisRateLimitStore(() => redis.create('rate-limit'), redis.key('rate-limit'))
          : new MemoryRateLimitStore(),
    },
    RateLimiter,
    PublishRateLimitGuard,
  ],
  exports: [PublishRateLimitGuard, RateLimiter, RateLimitStore],
})
export class RateLimitModule implements OnApplicationShutdown {
  constructor(private readonly store: RateLimitStore) {}

  onApplicationShutdown(): void {
    if (this.store instanceof MemoryRateLimitStore) this.store.stop();
  }
}
