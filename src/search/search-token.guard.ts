import {
  createParamDecorator,
  CanActivate,
  ExecutionContext,
  HttpException,
  Injectable,
  Logger,
  UnauthorizedException,
  type MiddlewareConsumer,
  type Type,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { AdminTokenGuard, answerAsUnknownRoute } from '../admin/admin-token.guard.js';
import { BearerToken } from '../common/bearer-token.js';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { RateLimiter, type RateLimitBudget } from '../rate-limit/rate-limiter.service.js';
import { searchConfig } from './search.config.js';

/** Whose token a search came with: what the log and the rate limit know of the caller. */
export type SearchIdentity = 'search-token' | 'admin-token';

export const RATE_LIMITED_MESSAGE = 'Too many requests: the search rate limit is exceeded';
const UNAUTHORIZED_MESSAGE = 'Missing or invalid bearer token';

/** Where the guard leaves the identity for the handler. */
const IDENTITY = Symbol('search-identity');

/** The identity the guard found for the request's token, as a handler's parameter. */
export const SearchCaller = createParamDecorator(
  (_: unknown, context: ExecutionContext) =>
    context.switchToHttp().getRequest<Request & { [IDENTITY]: SearchIdentity }>()[IDENTITY],
);

/**
 * The search needs `Authorization: Bearer <SEARCH_TOKEN or ADMIN_TOKEN>`, and counts each
 * search against its token's own budget (SEARCH_RATE_LIMIT). With neither token set it does
 * not exist: `hideUnlessEnabled` answers it first.
 */
@Injectable()
export class SearchTokenGuard implements CanActivate {
  private readonly expected?: BearerToken;
  private readonly budget: RateLimitBudget;
  private readonly logger = new Logger('Search');

  constructor(
    @InjectConfig(searchConfig) config: ConfigOf<typeof searchConfig>,
    private readonly admin: AdminTokenGuard,
    private readonly limiter: RateLimiter,
  ) {
    this.expected = config.token === undefined ? undefined : new BearerToken(config.token);
    this.budget = {
      name: 'search',
      limit: config.rateLimit,
      windowMs: config.rateWindowMs,
      message: RATE_LIMITED_MESSAGE,
    };
  }

  get enabled(): boolean {
    return this.expected !== undefined || this.admin.enabled;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<Request & { [IDENTITY]?: SearchIdentity }>();
    const identity = this.identify(request.headers.authorization);
    if (!identity) {
      this.logger.warn(`Name search refused (401) from ${request.ip}: no valid bearer token`);
      throw new UnauthorizedException(UNAUTHORIZED_MESSAGE);
    }
    try {
      await this.limiter.consume(this.budget, identity, http.getResponse<Response>());
    } catch (error) {
      if (error instanceof HttpException) {
        this.logger.warn(`Name search by the ${identity} refused (429): past its rate limit`);
      }
      throw error;
    }
    request[IDENTITY] = identity;
    return true;
  }

  /** With neither token set, the routes of `controllers` answer as unknown ones. */
  hideUnlessEnabled(consumer: MiddlewareConsumer, ...controllers: Type[]): void {
    if (!this.enabled) consumer.apply(answerAsUnknownRoute).forRoutes(...controllers);
  }

  private identify(authorization: string | undefined): SearchIdentity | undefined {
    if (this.expected?.matches(authorization)) return 'search-token';
    if (this.admin.accepts(authorization)) return 'admin-token';
    return undefined;
  }
}
