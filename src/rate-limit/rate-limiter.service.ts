import { HttpException, HttpStatus, Injectable } from '@nestjs/common';
import type { Response } from 'express';
import { RateLimitStore } from './rate-limit.store.js';

/** A budget of requests: `limit` per `windowMs` for each key (0: off). */
export interface RateLimitBudget {
  /** Keeps its counts apart from every other budget's (`publish`, `search`…). */
  name: string;
  limit: number;
  windowMs: number;
  /** The 429's message. */
  message: string;
}

/**
 * The rate limit, for any module with a budget of its own: counts in Redis when it is
 * configured (across all instances), else in memory. Past the budget, 429 with Retry-After;
 * every counted answer carries X-RateLimit-Limit and X-RateLimit-Remaining.
 */
@Injectable()
export class RateLimiter {
  constructor(private readonly store: RateLimitStore) {}

  /** Counts one request of `key` against `budget`, or throws the 429. */
  async consume(budget: RateLimitBudget, key: string, response: Response): Promise<void> {
    if (budget.limit === 0) return;
    const record = await this.store.hit(`${budget.name}:${key}`, budget.limit, budget.windowMs);
    response.setHeader('X-RateLimit-Limit', budget.limit);
    response.setHeader('X-RateLimit-Remaining', Math.max(0, budget.limit - record.hits));
    if (record.blocked) {
      response.setHeader('Retry-After', record.retryAfterSeconds);
      throw new HttpException(budget.message, HttpStatus.TOO_MANY_REQUESTS);
    }
  }
}
