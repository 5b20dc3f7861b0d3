import { describe, expect, it } from '@jest/globals';
import type { LiveInstance } from './detector-instances.js';
import { planShards, type ShardPlanInput } from './shard-plan.js';

const SETTLE = 1_000;
const at = (token: string, held: number, ageMs = 60_000): LiveInstance => ({
  token,
  held,
  ageMs,
});

function plan(self: string, live: LiveInstance[], extra: Partial<ShardPlanInput> = {}) {
  const held = live.find((i) => i.token === self)?.held ?? 0;
  return planShards({
    shardCount: 4,
    self,
    held,
    live,
    settleMs: SETTLE,
    coolingDown: false,
    ...extra,
  });
}

describe('planShards', () => {
  it('takes every shard alone, and a fair share of free shards among several', () => {
    expect(plan('a', [at('a', 0)])).toEqual({ release: 0, take: 4 });
    expect(plan('a', [at('a', 0), at('b', 0), at('c', 0)])).toEqual({ release: 0, take: 1 });
    // Everyone at the floor: the ceiling for the rest.
    expect(plan('a', [at('a', 1), at('b', 1), at('c', 1)])).toEqual({ release: 0, take: 1 });
    // Someone below the floor gets the free shard first.
    expect(plan('a', [at('a', 1), at('b', 2), at('c', 0)])).toEqual({ release: 0, take: 0 });
    // Nothing is free.
    expect(plan('a', [at('a', 2), at('b', 2)])).toEqual({ release: 0, take: 0 });
  });

  it('hands one shard over to a settled newcomer, from the most loaded instance only', () => {
    const live = [at('a', 2), at('b', 2), at('c', 0)];
    expect(plan('a', live)).toEqual({ release: 1, take: 0 });
    expect(plan('b', live)).toEqual({ release: 0, take: 0 });
    expect(plan('c', live)).toEqual({ release: 0, take: 0 });
  });

  it('waits for a newcomer to settle before handing anything over (hysteresis)', () => {
    const live = [at('a', 2), at('b', 2), at('c', 0, SETTLE - 1)];
    expect(plan('a', live)).toEqual({ release: 0, take: 0 });
  });

  it('gives up shards above the ceiling, one per heartbeat', () => {
    expect(plan('a', [at('a', 4), at('b', 0), at('c', 0)])).toEqual({ release: 1, take: 0 });
  });

  it('takes nothing above the floor while cooling down from a handover', () => {
    const live = [at('a', 1), at('b', 1), at('c', 1)];
    expect(plan('a', live, { coolingDown: true })).toEqual({ release: 0, take: 0 });
  });

  it('takes a dead instance’s shards once it is gone from the live instances', () => {
    expect(plan('a', [at('a', 1), at('b', 1)])).toEqual({ release: 0, take: 1 });
  });
});
