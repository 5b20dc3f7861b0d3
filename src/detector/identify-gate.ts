import { Logger } from '@nestjs/common';
import type { RedisClient } from '../redis/index.js';
import type { APIGatewaySessionStartLimit } from 'discord.js';
import { setTimeout as delay } from 'node:timers/promises';

/**
 * Discord's identify window (`max_concurrency` identifies per 5 s, one per bucket), held a
 * little longer. Discord counts an IDENTIFY when it arrives, so the window is held twice: from
 * the turn, and again from the shard's READY, which Discord sends only once it has counted
 * the IDENTIFY. A first IDENTIFY late on its way (a stalled event loop between the turn and
 * the send, a slow network; seen: 4,977 ms between two arrivals) then cannot bring the next
 * one closer than the window.
 */
const IDENTIFY_WINDOW_MS = 5_250;
/** Discord's session-start budget is a day's: after a reset, the next comes a day later. */
export const DAY_MS = 86_400_000;
/** A bot's daily session starts, where Discord's answer does not say. */
const DEFAULT_DAILY_TOTAL = 1_000;
/** Below this many session starts left today, each identify is logged as a warning. */
const LOW_BUDGET = 100;
/** How soon a turn the store could not answer is asked for again. */
const STORE_RETRY_MS = 1_000;

/**
 * When a shard may IDENTIFY (start a new session): Discord allows one per 5 s per bucket
 * (`shard_id % max_concurrency`) and `session_start_limit.remaining` per day. A RESUME needs
 * no turn. `waitForIdentify` resolves once the shard may identify now (its turn counted), and
 * rejects only when `signal` aborts first: a store that cannot answer (Redis down) is asked
 * again, since @discordjs/ws takes any other rejection for a failed throttle, reconnects, and
 * then sends the IDENTIFY all the same (a second one, without a turn). `identified` holds the
 * bucket's window again from the shard's READY. `configure` gives it each login's limits.
 */
export abstract class IdentifyGate {
  protected readonly logger = new Logger('DiscordDetector');
  protected limit: APIGatewaySessionStartLimit = {
    total: DEFAULT_DAILY_TOTAL,
    remaining: DEFAULT_DAILY_TOTAL,
    reset_after: 86_400_000,
    max_concurrency: 1,
  };

  configure(limit: APIGatewaySessionStartLimit): Promise<void> {
    this.limit = limit;
    return Promise.resolve();
  }

  async waitForIdentify(shardId: number, signal: AbortSignal): Promise<void> {
    const bucket = shardId % Math.max(1, this.limit.max_concurrency);
    let warned = false;
    for (;;) {
      const turn = await this.tryTurn(bucket).catch((error: Error) => {
        this.logger.warn(
          `Discord detector: could not take shard ${shardId}'s identify turn: ${error.message}`,
        );
        return { granted: false, waitMs: STORE_RETRY_MS, budgetSpent: false } as const;
      });
      if (turn.granted) {
        if (turn.left < LOW_BUDGET) {
          this.logger.warn(
            `Discord detector: ${turn.left} session start(s) left today; shards that cannot ` +
              'resume wait for the daily reset',
          );
        }
        return;
      }
      if (turn.budgetSpent && !warned) {
        warned = true;
        this.logger.error(
          `Discord detector: no session start left today; shard ${shardId} waits ${turn.waitMs} ms for the reset`,
        );
      }
      await delay(turn.waitMs + Math.floor(Math.random() * 50), undefined, { signal });
    }
  }

  /** On the shard's READY: its bucket's next turn is a window from now. */
  async identified(shardId: number): Promise<void> {
    await this.holdFromNow(shardId % Math.max(1, this.limit.max_concurrency));
  }

  /** Takes the bucket's turn now if it is free and the day's budget allows. */
  protected abstract tryTurn(bucket: number): Promise<Turn>;

  /** The bucket's next turn no sooner than a window from now. */
  protected abstract holdFromNow(bucket: number): Promise<void>;
}

export type Turn =
  { granted: true; left: number } | { granted: false; waitMs: number; budgetSpent: boolean };

/** The identify windows of one process (the embedded default, one instance). */
export class LocalIdentifyGate extends IdentifyGate {
  /** When each bucket may identify next (ms since the epoch). */
  private readonly nextAt = new Map<number, number>();
  private left = this.limit.remaining;
  private resetAt = 0;

  override configure(limit: APIGatewaySessionStartLimit): Promise<void> {
    this.left = limit.remaining;
    this.resetAt = Date.now() + limit.reset_after;
    return super.configure(limit);
  }

  protected tryTurn(bucket: number): Promise<Turn> {
    const now = Date.now();
    const wait = (this.nextAt.get(bucket) ?? 0) - now;
    if (wait > 0) return Promise.resolve({ granted: false, waitMs: wait, budgetSpent: false });
    if (this.left <= 0 && now < this.resetAt) {
      return Promise.resolve({ granted: false, waitMs: this.resetAt - now, budgetSpent: true });
    }
    if (now >= this.resetAt) {
      this.left = this.limit.total || DEFAULT_DAILY_TOTAL;
      this.resetAt = now + DAY_MS;
    }
    this.left -= 1;
    this.nextAt.set(bucket, now + IDENTIFY_WINDOW_MS);
    return Promise.resolve({ granted: true, left: this.left });
  }

  protected holdFromNow(bucket: number): Promise<void> {
    this.nextAt.set(
      bucket,
      Math.max(this.nextAt.get(bucket) ?? 0, Date.now() + IDENTIFY_WINDOW_MS),
    );
    return Promise.resolve();
  }
}

// KEYS: the bucket's turn, the day's budget (one hash slot). ARGV: the window (ms), the
// day's total, a day (ms). The budget's key ends at Discord's reset: gone, a new day starts
// with the total (counted down from here until a login reads the count again).
// {1, left}: granted; {0, wait ms, 0|1 budget spent}.
const TURN = `local wait = redis.call('pttl', KEYS[1])
if wait > 0 then return {0, wait, 0} end
local stored = redis.call('get', KEYS[2])
local left = tonumber(stored or ARGV[2])
if left <= 0 then return {0, math.max(redis.call('pttl', KEYS[2]), 1000), 1} end
if stored then redis.call('decr', KEYS[2]) else redis.call('set', KEYS[2], left - 1, 'PX', ARGV[3]) end
redis.call('set', KEYS[1], '1', 'PX', ARGV[1])
return {1, left - 1}`;

// KEYS: the day's budget. ARGV: the session starts left, as a login read them; until the reset.
// Only ever lowers the count: a login that read it before another instance's identify must
// not give that identify back. The key ends at the reset (see TURN).
const SESSION_STARTS = `local left = redis.call('get', KEYS[1])
if left and tonumber(left) <= tonumber(ARGV[1]) then return 0 end
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`;

/**
 * The identify limits across every instance, in Redis: a key per bucket
 * (`{<prefix>:detector}:identify:<bucket>`, set for the window by the identify that takes
 * the turn, and again at its READY) and the day's session starts left (`…:session-starts`,
 * set from each login's GET /gateway/bot, which counts every instance's identifies, never
 * raised by it, counted down by each identify, and the day's total again after the reset).
 * One script takes a turn, so no number of instances exceeds them.
 */
export class RedisIdentifyGate extends IdentifyGate {
  constructor(
    private readonly redis: RedisClient,
    /** `{<prefix>:detector}`: the hash tag the keys share. */
    private readonly keyBase: string,
  ) {
    super();
  }

  override async configure(limit: APIGatewaySessionStartLimit): Promise<void> {
    await super.configure(limit);
    await this.redis.eval(
      SESSION_STARTS,
      1,
      `${this.keyBase}:session-starts`,
      limit.remaining,
      Math.max(1, limit.reset_after),
    );
  }

  protected async tryTurn(bucket: number): Promise<Turn> {
    const [granted, value, spent] = (await this.redis.eval(
      TURN,
      2,
      `${this.keyBase}:identify:${bucket}`,
      `${this.keyBase}:session-starts`,
      IDENTIFY_WINDOW_MS,
      this.limit.total || DEFAULT_DAILY_TOTAL,
      DAY_MS,
    )) as [number, number, number?];
    if (granted === 1) return { granted: true, left: value };
    return { granted: false, waitMs: value, budgetSpent: spent === 1 };
  }

  protected async holdFromNow(bucket: number): Promise<void> {
    // Only ever later: a turn another instance took since then is held a little longer.
    await this.redis.set(`${this.keyBase}:identify:${bucket}`, '1', 'PX', IDENTIFY_WINDOW_MS);
  }
}
