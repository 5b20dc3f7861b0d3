import { Logger } from '@nestjs/common';
import { once } from 'node:events';
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
  private redis?: Promise<RedisClient>;

  /**
   * `connect` is called at the first hit, which waits for the connection (commands fail at
   * once while it is down): an instance whose budgets are all off holds no connection.
   */
  constructor(
    private readonly connect: () => RedisClient,
    private readonly prefix: string,
  ) {
    super();
  }

  async hit(key: string, limit: number, windowMs: number): Promise<RateLimitRecord> {
    try {
      const redis = await (this.redis ??= whenReady(this.connect()));
      const [hits, ttlMs] = (await redis.eval(HIT, 1, `${this.prefix}:${key}`, windowMs)) as [
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

/** How long the first hit waits for the new connection; past it, the hit goes on (and passes). */
const FIRST_CONNECT_WAIT_MS = 2_000;

async function whenReady(redis: RedisClient): Promise<RedisClient> {
  if (redis.status !== 'ready') {
    const timeout = AbortSignal.timeout(FIRST_CONNECT_WAIT_MS);
    await once(redis, 'ready', { signal: timeout }).catch(() => undefined);
  }
  return redis;
}
