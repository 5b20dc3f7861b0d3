import { Module, OnApplicationShutdown } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/configuration.js';
import { RedisConnections } from '../redis/redis-connections.js';
import { RedisModule } from '../redis/redis.module.js';
import { PublishRateLimitGuard } from './publish-rate-limit.guard.js';
import { MemoryRateLimitStore, RateLimitStore } from './rate-limit.store.js';
import { RedisRateLimitStore } from './redis-rate-limit.store.js';

/** The publish rate limit: its guard, and a store in Redis when configured, else in memory. */
@Module({
  imports: [RedisModule],
  providers: [
    {
      provide: RateLimitStore,
      inject: [ConfigService, RedisConnections],
      useFactory: (
        config: ConfigService<AppConfig, true>,
        redis: RedisConnections,
      ): RateLimitStore => {
        const { rateLimit } = config.get('publish', { infer: true });
        // No limit, no connection to hold.
        return redis.enabled && rateLimit > 0
          ? new RedisRateLimitStore(redis.create('rate-limit'), redis.key('rate-limit'))
          : new MemoryRateLimitStore();
      },
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
