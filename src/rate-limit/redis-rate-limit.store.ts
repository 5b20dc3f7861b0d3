import { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { redisOptions } from '../bus/redis-name-event.bus.js';
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
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix: string,
  ) {
    super();
    this.redis = new Redis(url, redisOptions('name-events:rate-limit'));
    this.redis.on('error', () => undefined);
  }

  async hit(key: string, limit: number, windowMs: number): Promise<RateLimitRecord> {
    try {
      const [hits, ttlMs] = (await this.redis.eval(
        HIT,
        1,
        `${this.prefix}:rate-limit:${key}`,
        windowMs,
      )) as [number, number];
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

  async stop(): Promise<void> {
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => undefined);
    else this.redis.disconnect();
  }
}
