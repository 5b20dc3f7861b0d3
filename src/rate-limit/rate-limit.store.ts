/** One client's count in the current window. */
export interface RateLimitRecord {
  hits: number;
  /** True once past the limit: refused until the block expires. */
  blocked: boolean;
  /** Seconds until the window (or the block) ends. */
  retryAfterSeconds: number;
}

/** Where the counts live: Redis when configured (shared by all instances), else memory. */
export abstract class RateLimitStore {
  /** Counts one hit for `key` in a fixed window of `windowMs`; past `limit`, blocks for the rest of the window. */
  abstract hit(key: string, limit: number, windowMs: number): Promise<RateLimitRecord>;
}

/** The store of a single instance. */
export class MemoryRateLimitStore extends RateLimitStore {
  private readonly windows = new Map<string, { hits: number; resetAt: number }>();
  private readonly sweeper = setInterval(() => this.sweep(), 60_000).unref();

  hit(key: string, limit: number, windowMs: number): Promise<RateLimitRecord> {
    const now = Date.now();
    let window = this.windows.get(key);
    if (!window || window.resetAt <= now) {
      window = { hits: 0, resetAt: now + windowMs };
      this.windows.set(key, window);
    }
    window.hits += 1;
    return Promise.resolve({
      hits: window.hits,
      blocked: window.hits > limit,
      retryAfterSeconds: Math.ceil((window.resetAt - now) / 1000),
    });
  }

  stop(): void {
    clearInterval(this.sweeper);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key);
  }
}
