import {
  CanActivate,
  ExecutionContext,
  HttpException,
  HttpStatus,
  Injectable,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { rateLimitConfig } from './rate-limit.config.js';
import { RateLimitStore } from './rate-limit.store.js';

export const RATE_LIMITED_MESSAGE = 'Too many requests: the publish rate limit is exceeded';

/**
 * PUBLISH_RATE_LIMIT publishes per PUBLISH_RATE_WINDOW_MS per client address (0, the
 * default, turns it off), across all instances; past it, 429 with Retry-After.
 * (Written here rather than with @nestjs/throttler, which is CommonJS importing the ESM-only
 * NestJS 12 packages, something Jest cannot load on Node 20.)
 */
@Injectable()
export class PublishRateLimitGuard implements CanActivate {
  private readonly limit: number;
  private readonly windowMs: number;

  constructor(
    private readonly store: RateLimitStore,
    @InjectConfig(rateLimitConfig) { limit, windowMs }: ConfigOf<typeof rateLimitConfig>,
  ) {
    this.limit = limit;
    this.windowMs = windowMs;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.limit === 0) return true;
    const http = context.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    const record = await this.store.hit(`publish:${request.ip}`, this.limit, this.windowMs);
    response.setHeader('X-RateLimit-Limit', this.limit);
    response.setHeader('X-RateLimit-Remaining', Math.max(0, this.limit - record.hits));
    if (record.blocked) {
      response.setHeader('Retry-After', record.retryAfterSeconds);
      throw new HttpException(RATE_LIMITED_MESSAGE, HttpStatus.TOO_MANY_REQUESTS);
    }
    return true;
  }
}
