import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { rateLimitConfig } from './rate-limit.config.js';
import { RateLimiter, type RateLimitBudget } from './rate-limiter.service.js';

export const RATE_LIMITED_MESSAGE = 'Too many requests: the publish rate limit is exceeded';

/**
 * PUBLISH_RATE_LIMIT publishes per PUBLISH_RATE_WINDOW_MS per client address (0, the
 * default, turns it off), across all instances; past it, 429 with Retry-After.
 * (Written here rather than with @nestjs/throttler, which is CommonJS importing the ESM-only
 * NestJS 12 packages, something Jest cannot load on Node 20.)
 */
@Injectable()
export class PublishRateLimitGuard implements CanActivate {
  private readonly budget: RateLimitBudget;

  constructor(
    private readonly limiter: RateLimiter,
    @InjectConfig(rateLimitConfig) { limit, windowMs }: ConfigOf<typeof rateLimitConfig>,
  ) {
    this.budget = { name: 'publish', limit, windowMs, message: RATE_LIMITED_MESSAGE };
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<Request>();
    await this.limiter.consume(this.budget, request.ip ?? '', http.getResponse<Response>());
    return true;
  }
}
