import { afterAll, describe, expect, it } from '@jest/globals';
import type { APIGatewaySessionStartLimit } from 'discord.js';
import { Redis } from 'ioredis';
import {
  DAY_MS,
  LocalIdentifyGate,
  RedisIdentifyGate,
  type Turn,
} from '../src/detector/identify-gate.js';
import { uniqueRedisPrefix } from './support/app.js';
import { REDIS_URL } from './support/environment.js';
import { waitFor } from './support/ports.js';

/**
 * The day's session starts past Discord's reset, in both gates (the one of the process, and
 * the one shared in Redis): a new day's total is counted down as the day before was, and
 * spent, holds the next IDENTIFY back until the following reset. Shards of distinct buckets
 * (`max_concurrency` 8), so that only the budget holds a turn back.
 */
const redis = new Redis(REDIS_URL);
afterAll(() => redis.quit());

/** Gates whose turns the test takes itself (`tryTurn`: taken now, or refused and why). */
class LocalProbe extends LocalIdentifyGate {
  turn(shardId: number): Promise<Turn> {
    return this.tryTurn(shardId % 8);
  }
}
class RedisProbe extends RedisIdentifyGate {
  turn(shardId: number): Promise<Turn> {
    return this.tryTurn(shardId % 8);
  }
}

const gates: [string, () => LocalProbe | RedisProbe][] = [
  ['in the process', () => new LocalProbe()],
  ['in Redis', () => new RedisProbe(redis, `{${uniqueRedisPrefix()}:detector}`)],
];

describe.each(gates)('the session-start budget, %s', (_, create) => {
  it('counts a new day from its total after the reset, and holds back once it is spent', async () => {
    const gate = create();
    const limit: APIGatewaySessionStartLimit = {
      total: 2,
      remaining: 1,
      reset_after: 500,
      max_concurrency: 8,
    };
    await gate.configure(limit);

    expect(await gate.turn(0)).toEqual({ granted: true, left: 0 });
    const spent = await gate.turn(1);
    expect(spent).toMatchObject({ granted: false, budgetSpent: true });
    expect((spent as { waitMs: number }).waitMs).toBeLessThanOrEqual(1_000);

    // After the reset: the day's total (2), one taken here.
    const first = await waitFor('the reset', async () => {
      const turn = await gate.turn(1);
      return turn.granted && turn;
    });
    expect(first).toEqual({ granted: true, left: 1 });
    expect(await gate.turn(2)).toEqual({ granted: true, left: 0 });
    const next = await gate.turn(3);
    expect(next).toMatchObject({ granted: false, budgetSpent: true });
    // Until the next reset, a day after the first.
    expect((next as { waitMs: number }).waitMs).toBeGreaterThan(DAY_MS - 60_000);
  });
});
