import { Module, OnApplicationShutdown } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/configuration.js';
import { PublishRateLimitGuard } from './publish-rate-limit.guard.js';
import { MemoryRateLimitStore, RateLimitStore } from './rate-limit.store.js';
import { RedisRateLimitStore } from './redis-rate-limit.store.js';

/** The publish rate limit: its guard, and a store in Redis when configured, else in memory. */
@Module({
  providers: [
    {
      provide: RateLimitStore,
      inject: [ConfigService],
      useFactory: (config: ConfigService<AppConfig, true>): RateLimitStore => {
        const { url, keyPrefix } = config.get('redis', { infer: true });
        const { rateLimit } = config.get('publish', { infer: true });
        // No limit, no connection to hold.
        return url && rateLimit > 0
          ? new RedisRateLimitStore(url, keyPrefix)
          : new MemoryRateLimitStore();
      },
    },
    PublishRateLimitGuard,
  ],
  exports: [PublishRateLimitGuard, RateLimitStore],
})
export class RateLimitModule implements OnApplicationShutdown {
  constructor(private readonly store: RateLimitStore) {}

  async onApplicationShutdown(): Promise<void> {
    await (this.store as RedisRateLimitStore | MemoryRateLimitStore).stop();
  }
}
