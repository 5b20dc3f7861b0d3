import type { Cluster, Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { withTimeout } from '../common/with-timeout.js';
import type { StoredNameEvent } from '../name-events/index.js';
import { BusUnavailableError, unavailable } from './name-event-bus.js';
import { ready, RedisNameEventBus } from './redis-name-event.bus.js';

/**
 * How long an instance counts as listening after it last said so (it says so every beat, and
 * its last holder's leaving unlists it). Long enough to outlast a failover (managed clusters
 * take up to about 30 s), so "no listener" is never claimed while listeners wait for their
 * shard to come back; an instance that died with listeners is counted that long after.
 */
const LISTENING_TTL_MS = 30_000;
/** How many MOVED replies a subscribe follows before it gives up (the map is changing). */
const MAX_REDIRECTIONS = 3;
// Entries expire by Redis's clock, not the instances' (which may disagree).
const NOW_MS = `local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;
// This instance listens for ARGV[1] ms more.
const ANNOUNCE = `${NOW_MS}
return redis.call('zadd', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])`;
// The instances listening now, forgetting the expired ones.
const LISTENING = `${NOW_MS}
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
return redis.call('zcard', KEYS[1])`;

type Node = { host: string; port: number };

/**
 * Sharded pub/sub on a Redis Cluster (`SPUBLISH` / `SSUBSCRIBE`, Redis 7+): the channel lives
 * on the shard that owns its slot, and SPUBLISH counts the receivers of that shard only.
 *
 * The subscription is held on a connection of the bus's own to the slot's master, not through
 * ioredis's `shardedSubscribers`: those connections are private and re-subscribe silently
 * after a failover or a slot migration, so the bus could not tell its streams that live
 * delivery broke (they must end, and resume from the database) nor when it is back. Here the
 * connection closing, or Redis unsubscribing it because the slot moved, ends the streams.
 *
 * "No listener on any instance" stays exact while subscriptions are being re-established: each
 * instance with listeners keeps an entry in `{prefix:name-events}:listening` (the channel's
 * slot), renewed every beat. A publish that reached no one while an instance says it listens
 * is the bus-unavailable error, not "no listener".
 */
export class ShardedRedisNameEventBus extends RedisNameEventBus {
  declare protected readonly publisher: Cluster;
  private readonly listening = `${this.channel}:listening`;
  private readonly token = `${hostname()}:${process.pid}:${randomUUID()}`;
  /** Where the channel's slot was last found: asked first next time. */
  private owner?: Node;

  override async publish(
    events: readonly StoredNameEvent[],
    publishedAt: number,
  ): Promise<number[]> {
    const receivers = await super.publish(events, publishedAt);
    if (receivers.includes(0) && (await this.listeningInstances()) > 0) {
      throw new BusUnavailableError('Redis subscriptions are being re-established');
    }
    return receivers;
  }

  protected override async openSubscription(): Promise<void> {
    let node = this.owner ?? this.anyMaster();
    for (let redirections = 0; node; redirections++) {
      const connection = this.redis.createNode('subscriber', node);
      let master: Node | undefined;
      try {
        await withTimeout(ready(connection), 3_000);
        // A replica accepts SSUBSCRIBE for its master's slots and gets the messages, but
        // SPUBLISH counts the master's subscribers only: subscribe on the master.
        master = await masterOf(connection);
        if (!master) await connection.ssubscribe(this.channel);
      } catch (error) {
        connection.disconnect();
        const message = (error as Error).message ?? String(error);
        const moved = /^MOVED \d+ (.+):(\d+)$/.exec(message);
        if (!moved || redirections === MAX_REDIRECTIONS) {
          this.owner = undefined;
          throw new BusUnavailableError(`Redis subscribe failed: ${message}`);
        }
        node = { host: moved[1], port: Number(moved[2]) };
        continue;
      }
      if (master) {
        connection.disconnect();
        if (redirections === MAX_REDIRECTIONS) {
          throw new BusUnavailableError('Redis subscribe failed: no master found for the channel');
        }
        node = master;
        continue;
      }
      this.owner = node;
      this.subscriber = connection;
      connection.on('smessage', (_channel: string, message: string) => this.onMessage(message));
      connection.once('close', () => this.lose(connection, 'Redis subscriber connection lost'));
      // Redis unsubscribed it: the slot moved to another node.
      connection.once('moved', () => this.lose(connection, 'the bus channel slot moved'));
      try {
        await this.announce();
      } catch (error) {
        this.drop();
        throw new BusUnavailableError(`Redis subscribe failed: ${(error as Error).message}`);
      }
      return;
    }
    throw new BusUnavailableError('Redis Cluster: no master node known');
  }

  protected override async closeSubscription(): Promise<void> {
    // Unlisted first: between the two, a publish reaches this instance, not "no listener".
    await this.publisher.zrem(this.listening, this.token).catch(() => undefined);
    this.drop();
  }

  protected override async beat(): Promise<void> {
    await Promise.all([super.beat(), this.announce().catch(() => undefined)]);
  }

  /** A command on the channel's slot: the bus is up when the shard that carries it answers. */
  override async ping(): Promise<void> {
    await this.publisher.exists(this.listening);
  }

  /** This instance listens (for the next LISTENING_TTL_MS). */
  private async announce(): Promise<void> {
    if (!this.live && !this.subscriber) return;
    await this.publisher.eval(ANNOUNCE, 1, this.listening, LISTENING_TTL_MS, this.token);
  }

  private async listeningInstances(): Promise<number> {
    const listening = this.publisher.eval(LISTENING, 1, this.listening);
    return (await listening.catch(unavailable('Redis publish failed'))) as number;
  }

  private lose(connection: Redis, reason: string): void {
    if (this.subscriber !== connection) return;
    // Its node may not own the slot any more, or not be a master.
    this.owner = undefined;
    this.drop();
    this.onSubscriptionLost(reason);
  }

  private drop(): void {
    const connection = this.subscriber;
    this.subscriber = undefined;
    connection?.removeAllListeners('smessage');
    connection?.disconnect();
  }

  private anyMaster(): Node | undefined {
    const [master] = this.publisher.nodes('master');
    return master && { host: master.options.host!, port: master.options.port! };
  }
}

/** The master of the node `connection` is on, when that node is a replica. */
async function masterOf(connection: Redis): Promise<Node | undefined> {
  const [role, host, port] = (await connection.role()) as [string, string, number];
  return role === 'slave' ? { host, port: Number(port) } : undefined;
}
