import {
  type CanActivate,
  type ExecutionContext,
  HttpException,
  Injectable,
  Logger,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { callerOf, type Caller } from '../auth/index.js';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { RateLimitService, type RateLimitBudget } from '../rate-limit/index.js';
import { searchConfig } from './search.config.js';

/** Whose token a search came with: what the log and the rate limit know of the caller. */
export type SearchIdentity = Extract<Caller, 'search-token' | 'admin-token'>;

export const RATE_LIMITED_MESSAGE = 'Too many requests: the search rate limit is exceeded';

/**
 * Counts each search against its token's own budget (SEARCH_RATE_LIMIT), after
 * `@RequireToken('search')` has found which token it came with.
 */
@Injectable()
export class SearchRateLimitGuard implements CanActivate {
  private readonly budget: RateLimitBudget;
  private readonly logger = new Logger('Search');

  constructor(
    @InjectConfig(searchConfig) config: ConfigOf<typeof searchConfig>,
    private readonly limits: RateLimitService,
  ) {
    this.budget = {
      name: 'search',
      limit: config.rateLimit,
      windowMs: config.rateWindowMs,
      message: RATE_LIMITED_MESSAGE,
    };
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const identity = callerOf(http.getRequest<Request>()) as SearchIdentity;
    try {
      await this.limits.consume(this.budget, identity, http.getResponse<Response>());
    } catch (error) {
      if (error instanceof HttpException) {
        this.logger.warn(`Name search by the ${identity} refused (429): past its rate limit`);
      }
      throw error;
    }
    return true;
  }
}
