import { Inject, Injectable, Logger } from '@nestjs/common';
import { GatewayDispatchEvents, type GatewayDispatchPayload } from 'discord.js';
import { DetectorOutbox } from './detector-outbox.js';
import { DETECTOR_SETTINGS, type DetectorSettings } from './detector.settings.js';
import type { DiscordGateway } from './discord-gateway.js';
import { GuildQueue } from './guild-queue.js';
import type { DispatchContext } from './shard-connection.js';

/**
 * Asks the gateway for the member list of every server whose GUILD_CREATE did not carry all
 * its members (a large server's carries only a few), so that reconciliation sees every
 * member: the chunks that answer are full views (NameChangeDetector reads them, and nothing
 * keeps them here). Every GUILD_CREATE asks again: after a start, a new session, an outage of
 * the server, a join; and after a live update of the server was dropped (the outbox full), so
 * that its change is found. One server at a time per shard (one REQUEST_GUILD_MEMBERS each, within
 * @discordjs/ws's send limit of the connection), and only while the members already
 * received are few enough to wait in memory. The gateway rate-limits these requests
 * (RATE_LIMITED with `retry_after`): the same server is asked again once the window passes.
 */
@Injectable()
export class MemberListRequester {
  readonly logger = new Logger('DiscordDetector');

  constructor(
    @Inject(DETECTOR_SETTINGS) readonly settings: DetectorSettings,
    readonly outbox: DetectorOutbox,
  ) {}

  /** Starts requesting on `gateway`'s shards; returns the function that stops. */
  watch(gateway: DiscordGateway): () => void {
    const queues = new Map<number, GuildQueue>();
    /** The shard of each available server (its GUILD_CREATE), while that shard runs here. */
    const shardOf = new Map<string, number>();
    const queueOf = (shardId: number) => {
      let queue = queues.get(shardId);
      if (!queue) queues.set(shardId, (queue = new GuildQueue(this, gateway, shardId, shardOf)));
      return queue;
    };
    const onDispatch = (
      packet: GatewayDispatchPayload,
      shardId: number,
      { replayed }: DispatchContext,
    ) => {
      switch (packet.t) {
        case GatewayDispatchEvents.GuildCreate: {
          const d = packet.d;
          if (d.unavailable) {
            shardOf.delete(d.id);
            break;
          }
          shardOf.set(d.id, shardId);
          // Replayed, its members are old news (NameChangeDetector leaves them out): asked afresh.
          const partial = (d.members ?? []).length < d.member_count;
          if (partial || replayed) queueOf(shardId).add(d.id);
          break;
        }
        case GatewayDispatchEvents.GuildDelete:
          shardOf.delete(packet.d.id);
          break;
        case GatewayDispatchEvents.GuildMembersChunk: {
          const { nonce, chunk_index, chunk_count, members } = packet.d;
          queues.get(shardId)?.chunk(nonce, chunk_index, chunk_count, members.length);
          break;
        }
        case GatewayDispatchEvents.RateLimited: {
          const { meta, retry_after } = packet.d;
          queues.get(shardId)?.rateLimited(meta.nonce, Math.ceil(retry_after * 1000));
          break;
        }
      }
    };
    const stopDispatches = gateway.onDispatch(onDispatch);
    const stopShards = gateway.onShardStopped((shardId) => {
      queues.get(shardId)?.stop();
      queues.delete(shardId);
      for (const [guildId, shard] of shardOf) if (shard === shardId) shardOf.delete(guildId);
    });
    // A live update dropped (the outbox full, Postgres down for long): its server's full view
    // finds the change, and is asked for now rather than at the next new session.
    const stopDrops = this.outbox.onLiveDropped((guildId) => {
      const shardId = shardOf.get(guildId);
      if (shardId !== undefined && gateway.shardIds.includes(shardId))
        queueOf(shardId).add(guildId);
    });
    return () => {
      stopDispatches();
      stopShards();
      stopDrops();
      for (const queue of queues.values()) queue.stop();
      queues.clear();
    };
  }
}
