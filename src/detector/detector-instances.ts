import type { RedisClient } from '../redis/index.js';
import { once } from 'node:events';
import { withTimeout } from '../common/with-timeout.js';

export interface LiveInstance {
  token: string;
  /** Shards it runs now, as its last heartbeat said. */
  held: number;
  /** How long it has been announcing itself (ms). */
  ageMs: number;
}

// One hash: field token → "<expires at> <joined at> <held>", times from Redis's
// clock (no skew between instances). Expired entries are removed as they are read.
const HEARTBEAT = `local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local old = redis.call('hget', KEYS[1], ARGV[1])
local joined = now
if old then joined = tonumber(string.match(old, '^%d+ (%d+)')) end
redis.call('hset', KEYS[1], ARGV[1], (now + tonumber(ARGV[2])) .. ' ' .. joined .. ' ' .. ARGV[3])
redis.call('pexpire', KEYS[1], tonumber(ARGV[2]) * 10)
local all = redis.call('hgetall', KEYS[1])
local live = {now}
for i = 1, #all, 2 do
  local expires = tonumber(string.match(all[i + 1], '^(%d+)'))
  if expires < now then
    redis.call('hdel', KEYS[1], all[i])
  else
    table.insert(live, all[i])
    table.insert(live, all[i + 1])
  end
end
return live`;

/**
 * The instances that run the detector, as they announce themselves: each heartbeat says
 * how many shards this instance holds and answers with every instance alive (its own entry included).
 * An entry not renewed within its ttl is gone: the instance died. In Redis, one hash of the
 * deployment's live detector instances; without it, this is the only instance.
 */
export class DetectorInstances {
  private readonly startedAt = Date.now();

  constructor(
    private readonly redis?: RedisClient,
    /** `{<prefix>:detector}:instances`: the detector's keys share one hash slot. */
    private readonly key = '',
  ) {}

  async heartbeat(token: string, held: number, ttlMs: number): Promise<LiveInstance[]> {
    if (!this.redis) return [{ token, held, ageMs: Date.now() - this.startedAt }];
    // Commands fail at once while the connection is not ready (no offline queue).
    if (this.redis.status !== 'ready') await withTimeout(once(this.redis, 'ready'), ttlMs);
    const reply = (await this.redis.eval(HEARTBEAT, 1, this.key, token, ttlMs, held)) as [
      number,
      ...string[],
    ];
    const [now, ...fields] = reply;
    const live: LiveInstance[] = [];
    for (let i = 0; i < fields.length; i += 2) {
      const [, joinedAt, heldBy] = fields[i + 1].split(' ').map(Number);
      live.push({ token: fields[i], held: heldBy, ageMs: now - joinedAt });
    }
    return live;
  }

  /** Leaves at once (shutdown): the others count without it from their next heartbeat. */
  async leave(token: string): Promise<void> {
    await this.redis?.hdel(this.key, token);
  }
}
