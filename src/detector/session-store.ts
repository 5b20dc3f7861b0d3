import type { RedisClient } from '../redis/index.js';
import type { StoredSession } from './shard-connection.js';

/** Long past any session Discord still resumes: only so that keys do not pile up. */
const SESSION_TTL_MS = 86_400_000;

// A hash per shard: `session` (JSON) and `owner` (the instance that may write it).
// Loading makes the loader the owner: an earlier holder's late save is refused.
const LOAD = `redis.call('hset', KEYS[1], 'owner', ARGV[1])
redis.call('pexpire', KEYS[1], ARGV[2])
return redis.call('hget', KEYS[1], 'session')`;
const SAVE = `local owner = redis.call('hget', KEYS[1], 'owner')
if owner and owner ~= ARGV[1] then return 0 end
if ARGV[2] == '' then
  redis.call('del', KEYS[1])
else
  redis.call('hset', KEYS[1], 'owner', ARGV[1], 'session', ARGV[2])
  redis.call('pexpire', KEYS[1], ARGV[3])
end
return 1`;

/**
 * Where a shard's session (id, sequence, resume URL) is kept between connections: in this
 * process only, or in Redis (`{<prefix>:detector}:session:<shard>`), so that the next
 * holder of a shard, on any instance, resumes its session: Discord replays what it missed
 * and no identify is spent. Only the instance that loaded a shard's session last may save
 * it: one that lost the shard's lease cannot write an older sequence over the new holder's.
 */
export class SessionStore {
  /** Without Redis. */
  private readonly sessions = new Map<number, StoredSession>();

  constructor(
    private readonly redis?: RedisClient,
    /** `{<prefix>:detector}`: the hash tag of the detector's keys. */
    private readonly keyBase = '',
    /** This instance. */
    private readonly owner = '',
  ) {}

  /** The shard's session, now this instance's: a save by an earlier holder is refused from now on. */
  async load(shardId: number): Promise<StoredSession | null> {
    if (!this.redis) return this.sessions.get(shardId) ?? null;
    const json = (await this.redis.eval(
      LOAD,
      1,
      this.keyOf(shardId),
      this.owner,
      SESSION_TTL_MS,
    )) as string | null;
    return json ? (JSON.parse(json) as StoredSession) : null;
  }

  async save(shardId: number, session: StoredSession | null): Promise<void> {
    if (!this.redis) {
      if (session) this.sessions.set(shardId, session);
      else this.sessions.delete(shardId);
      return;
    }
    await this.redis.eval(
      SAVE,
      1,
      this.keyOf(shardId),
      this.owner,
      session ? JSON.stringify(session) : '',
      SESSION_TTL_MS,
    );
  }

  private keyOf(shardId: number): string {
    return `${this.keyBase}:session:${shardId}`;
  }
}
