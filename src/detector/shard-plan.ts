import type { LiveInstance } from './detector-instances.js';

export interface ShardPlanInput {
  shardCount: number;
  /** This instance's token. */
  self: string;
  /** Shards this instance runs now. */
  held: number;
  /** Every live instance, this one included (as of the heartbeat just sent). */
  live: readonly LiveInstance[];
  /** How long an instance must have been announcing itself before others hand shards to it. */
  settleMs: number;
  /** This instance let go of a shard to even out the load less than `settleMs` ago. */
  coolingDown: boolean;
}

export interface ShardPlan {
  /** Shards to hand over now (0 or 1: one per heartbeat, no storms). */
  release: number;
  /** Free shards to try to take now. */
  take: number;
}

/**
 * What this instance does with its shards at a heartbeat, from what every live instance
 * announced: shards spread evenly, each instance holding at most ⌈shards ÷ live instances⌉.
 * - It takes free shards up to ⌊shards ÷ live⌋ first; up to the ceiling only once nobody is
 *   below the floor (so the instance that needs them gets them first).
 * - It hands one over when it holds more than the ceiling, or when a settled instance is
 *   below the floor and this one is the most loaded (ties by token: exactly one gives).
 * Hysteresis: an instance counts for handing over only once it has been live for `settleMs`,
 * and one that gave a shard away takes none above the floor for as long, so a flapping
 * instance or a race between two takers does not make shards go back and forth.
 */
export function planShards(input: ShardPlanInput): ShardPlan {
  const { shardCount, self, held, live, settleMs, coolingDown } = input;
  const everyone = live.some((i) => i.token === self)
    ? live
    : [...live, { token: self, held, ageMs: 0 }];
  const settled = everyone.filter((i) => i.token === self || i.ageMs >= settleMs);
  const keepCeiling = Math.ceil(shardCount / settled.length);
  const keepFloor = Math.floor(shardCount / settled.length);
  const others = settled.filter((i) => i.token !== self);
  if (held > keepCeiling) return { release: 1, take: 0 };
  const starving = others.some((i) => i.held < keepFloor);
  if (starving && held > keepFloor && mostLoaded(settled) === self) {
    return { release: 1, take: 0 };
  }

  const takeCeiling = Math.ceil(shardCount / everyone.length);
  const takeFloor = Math.floor(shardCount / everyone.length);
  const announced = everyone.reduce((sum, i) => sum + (i.token === self ? held : i.held), 0);
  if (announced >= shardCount) return { release: 0, take: 0 };
  if (held < takeFloor) return { release: 0, take: takeFloor - held };
  const anyBelowFloor = everyone.some((i) => i.token !== self && i.held < takeFloor);
  if (anyBelowFloor || coolingDown) return { release: 0, take: 0 };
  return { release: 0, take: Math.max(0, takeCeiling - held) };
}

/** The token of the instance holding the most shards (the smallest token among equals). */
function mostLoaded(instances: readonly LiveInstance[]): string {
  return [...instances].sort((a, b) => b.held - a.held || (a.token < b.token ? -1 : 1))[0].token;
}
