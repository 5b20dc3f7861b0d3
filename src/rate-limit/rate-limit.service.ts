import { HttpException, HttpStatus, Injectable, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { once } from 'node:events';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import { RedisConnections, type RedisClient } from '../redis/index.js';

/** A budget of requests: `limit` per `windowMs` for each key (0: off). */
export interface RateLimitBudget {
  /** Keeps its counts apart from every other budget's (`publish`, `search`…). */
  name: string;
  limit: number;
  windowMs: number;
  /** The 429's message. */
  message: string;
}

/** How long the first counted request waits for the new connection; past it, it passes. */
const FIRST_CONNECT_WAIT_MS = 2_000;

/**
 * The rate limits of every module (rate-limiter-flexible): counted in Redis when it is
 * configured (across all instances; one key per client, so any cluster slot will do), else
 * in memory. Past a budget, 429 with Retry-After; every counted answer carries
 * X-RateLimit-Limit and X-RateLimit-Remaining. When Redis cannot answer, requests pass: a
 * rate limit must not turn a Redis hiccup into refusals (a publish then reports the bus).
 */
@Injectable()
export class RateLimitService {
  private readonly logger = new Logger('RateLimit');
  /** Opened at the first counted request: an instance whose budgets are all off holds none. */
  private redis?: Promise<RedisClient>;
  private readonly limiters = new Map<string, Promise<RateLimiterAbstract>>();

  constructor(private readonly connections: RedisConnections) {}

  /** Counts one request of `key` against `budget`, or throws the 429. */
  async consume(budget: RateLimitBudget, key: string, response: Response): Promise<void> {
    if (budget.limit === 0) return;
    const counted = await this.limiter(budget)
      .then((limiter) => limiter.consume(key))
      .catch((refusal: unknown) => {
        if (refusal instanceof RateLimiterRes) return refusal;
        // Uncounted: the request passes, with its whole budget left.
        this.logger.warn(
          `Rate limit not applied, Redis unavailable: ${(refusal as Error).message}`,
        );
        return new RateLimiterRes(budget.limit, 0);
      });
    response.setHeader('X-RateLimit-Limit', budget.limit);
    response.setHeader('X-RateLimit-Remaining', counted.remainingPoints);
    if (counted.consumedPoints > budget.limit) {
      response.setHeader('Retry-After', Math.max(1, Math.ceil(counted.msBeforeNext / 1000)));
      throw new HttpException(budget.message, HttpStatus.TOO_MANY_REQUESTS);
    }
  }

  private limiter(budget: RateLimitBudget): Promise<RateLimiterAbstract> {
    let limiter = this.limiters.get(budget.name);
    if (!limiter) {
      // A fixed window per key; the Redis keys are `<prefix>:rate-limit:<budget>:<key>`.
      const options = { points: budget.limit, duration: budget.windowMs / 1000 };
      limiter = this.connections.enabled
        ? this.connect().then(
            (storeClient) =>
              new RateLimiterRedis({
                ...options,
                storeClient,
                keyPrefix: this.connections.key(`rate-limit:${budget.name}`),
              }),
          )
        : Promise.resolve(new RateLimiterMemory({ ...options, keyPrefix: budget.name }));
      this.limiters.set(budget.name, limiter);
    }
    return limiter;
  }

  /** Commands fail at once while a connection is down: the first one waits for it to be up. */
  private connect(): Promise<RedisClient> {
    return (this.redis ??= (async () => {
      const redis = this.connections.create('rate-limit');
      if (redis.status !== 'ready') {
        const timeout = AbortSignal.timeout(FIRST_CONNECT_WAIT_MS);
        await once(redis, 'ready', { signal: timeout }).catch(() => undefined);
      }
      return redis;
    })());
  }
}
