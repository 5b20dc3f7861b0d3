import {
  type CanActivate,
  type ExecutionContext,
  HttpException,
  Injectable,
  mixin,
  type Type,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { InjectConfig, type ConfigSection } from '../config/config-section.js';
import { RateLimitService, type RateLimitBudget } from './rate-limit.service.js';

/** What a rate-limit guard counts, and against which budget. */
export interface RateLimitRule<C> {
  /** The configuration the budget is made of. */
  section: ConfigSection<C>;
  budget: (config: C) => RateLimitBudget;
  /** Whose request it is: each key has a budget of its own. */
  key: (request: Request) => string;
  /** Called with the key of a request refused with the 429. */
  refused?: (key: string) => void;
}

/** A guard that counts each request against `rule`'s budget (see RateLimitService). */
export function RateLimitGuard<C>(rule: RateLimitRule<C>): Type<CanActivate> {
  @Injectable()
  class Guard implements CanActivate {
    private readonly budget: RateLimitBudget;

    constructor(
      private readonly limits: RateLimitService,
      @InjectConfig(rule.section) config: C,
    ) {
      this.budget = rule.budget(config);
    }

    async canActivate(context: ExecutionContext): Promise<boolean> {
      const http = context.switchToHttp();
      const key = rule.key(http.getRequest<Request>());
      try {
        await this.limits.consume(this.budget, key, http.getResponse<Response>());
      } catch (error) {
        if (error instanceof HttpException) rule.refused?.(key);
        throw error;
      }
      return true;
    }
  }
  return mixin(Guard);
}
