import { Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { RedisModule } from '../redis/index.js';
import { PublishRateLimitGuard } from './publish-rate-limit.guard.js';
import { rateLimitConfig } from './rate-limit.config.js';
import { RateLimitService } from './rate-limit.service.js';

/** The rate limit: `RateLimitService` for any module's budget (the publish one's guard is here). */
@Owns({ config: [rateLimitConfig] })
@Module({
  imports: [RedisModule],
  providers: [RateLimitService, PublishRateLimitGuard],
  exports: [PublishRateLimitGuard, RateLimitService],
})
export class RateLimitModule {}
