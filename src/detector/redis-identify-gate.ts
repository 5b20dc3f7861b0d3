import type { RedisClient } from '../redis/index.js';
import type { APIGatewaySessionStartLimit } from 'discord.js';
import {
  DAY_MS,
  DEFAULT_DAILY_TOTAL,
  IDENTIFY_WINDOW_MS,
  IdentifyGate,
  type Turn,
} from './identify-gate.js';

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
