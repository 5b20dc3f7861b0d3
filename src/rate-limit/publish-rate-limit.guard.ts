import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { rateLimitConfig } from './rate-limit.config.js';
import { RateLimitService, type RateLimitBudget } from './rate-limit.service.js';

export const RATE_LIMITED_MESSAGE = 'Too many requests: the publish rate limit is exceeded';

/**
 * PUBLISH_RATE_LIMIT publishes per PUBLISH_RATE_WINDOW_MS per client address (0, the
 * default, turns it off), across all instances; past it, 429 with Retry-After.
 */
@Injectable()
export class PublishRateLimitGuard implements CanActivate {
  private readonly budget: RateLimitBudget;

  constructor(
    private readonly limits: RateLimitService,
    @InjectConfig(rateLimitConfig) { limit, windowMs }: ConfigOf<typeof rateLimitConfig>,
  ) {
    this.budget = { name: 'publish', limit, windowMs, message: RATE_LIMITED_MESSAGE };
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<Request>();
    await this.limits.consume(this.budget, request.ip ?? '', http.getResponse<Response>());
    return true;
  }
}
