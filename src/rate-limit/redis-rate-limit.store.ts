import { Logger } from '@nestjs/common';
import type { RedisClient } from '../redis/redis-connections.js';
import { RateLimitRecord, RateLimitStore } from './rate-limit.store.js';

// One round trip: count the hit in a fixed window; returns the hits and the window's ms left.
const HIT = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {hits, redis.call('PTTL', KEYS[1])}
`;

/**
 * Counts in Redis, so the limit holds across all instances together. When Redis cannot
 * answer, requests pass: a rate limit must not turn a Redis hiccup into refused publishes
 * (the publish itself then reports the bus as unavailable).
 */
export class RedisRateLimitStore extends RateLimitStore {
  private readonly logger = new Logger('RedisRateLimitStore');
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {
    super();
  }

  async hit(key: string, limit: number, windowMs: number): Promise<RateLimitRecord> {
    try {
      const [hits, ttlMs] = (await this.redis.eval(HIT, 1, `${this.prefix}:${key}`, windowMs)) as [
        number,
        number,
      ];
      return {
        hits,
        blocked: hits > limit,
        retryAfterSeconds: Math.max(1, Math.ceil(ttlMs / 1000)),
      };
    } catch (error) {
      this.logger.warn(`Rate limit not applied, Redis unavailable: ${(error as Error).message}`);
      return { hits: 0, blocked: false, retryAfterSeconds: 0 };
    }
  }
}
