import { Injectable, Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import {
  GatewayDispatchEvents,
  type GatewayDispatchPayload,
  type GatewayGuildCreateDispatchData,
  type GatewayGuildMembersChunkDispatchData,
} from 'discord.js';
import { DetectorMetrics } from './detector.metrics.js';
import { Clock } from './clock.js';
import type { DiscordGateway } from './discord-gateway.js';
import type { DispatchContext, Hold } from './shard-connection.js';
import { DetectorOutbox } from './detector-outbox.js';
import { observeMember, type MemberObservation } from './member-observation.js';
import { ReconciliationRun } from './reconciliation-run.js';

/**
 * Reads what the gateway says about members, straight from its raw dispatches, into observations for the outbox, stamped with the time they arrived:
 * - live updates: GUILD_MEMBER_UPDATE (a member's nickname, and the user's names: Discord
 *   sends username and global-name changes of other users this way) and GUILD_MEMBER_ADD;
 * - full views: the members of GUILD_CREATE (after READY, on a new session, when a server
 *   comes back from an outage or the bot joins it) and of GUILD_MEMBERS_CHUNK (the rest of
 *   a large server's members, which MemberListRequester asks for).
 * Live updates replayed after a RESUME come through the same way, with their place in the
 * session, so that those stored already are not compared again (ShardProgressRepository);
 * full views replayed are left out (see `handle`). Every observation is
 * compared with the last known names: there is no member cache, so nothing depends on what
 * one held, and a change made while nobody watched is found at the next full view.
 * The bot's own user is left out.
 */
@Injectable()
export class NameChangeDetector {
  private readonly logger = new Logger('DiscordDetector');
  /** The gateway watched, one at a time: its `botUserId` is set by the time READY comes. */
  private gateway?: DiscordGateway;
  /** Each server's current full view. */
  private readonly runs = new Map<string, ReconciliationRun>();
  /** Chunk indexes received per member request (by nonce), until all have arrived. */
  private readonly chunksSeen = new Map<string, Set<number>>();

  constructor(
    private readonly clock: Clock,
    private readonly outbox: DetectorOutbox,
    private readonly metrics: DetectorMetrics,
  ) {}

  /**
   * Starts watching the gateway's dispatches (those of the gateway before are over); returns
   * the function that stops.
   */
  watch(gateway: DiscordGateway): () => void {
    this.gateway = gateway;
    this.runs.clear();
    this.chunksSeen.clear();
    return gateway.onDispatch((...dispatch) => this.handle(...dispatch));
  }

  /**
   * Runs inside the shard's packet handling: nothing may escape into the gateway connection.
   * A dispatch whose members go to the outbox is held until they are compared and stored.
   */
  private handle(packet: GatewayDispatchPayload, shardId: number, context: DispatchContext): void {
    const { hold, replayed } = context;
    try {
      switch (packet.t) {
        // A replayed full view is old news: the known names may be newer than it (the holder
        // before this one may have compared it, and what followed). MemberListRequester asks
        // for the server's members afresh instead.
        case GatewayDispatchEvents.GuildCreate:
          if (!replayed) this.guildCreate(packet.d, hold);
          break;
        case GatewayDispatchEvents.GuildMembersChunk:
          if (!replayed) this.membersChunk(packet.d, hold);
          break;
        case GatewayDispatchEvents.GuildMemberUpdate:
        case GatewayDispatchEvents.GuildMemberAdd: {
          const observations = this.observe(packet.d.guild_id, [packet.d]);
          const { sessionId } = context;
          if (sessionId !== undefined) {
            const position = { shardId, sessionId, sequence: packet.s, replayed };
            for (const observation of observations) observation.position = position;
          }
          this.outbox.observeLive(observations, hold());
          break;
        }
      }
    } catch (error) {
      this.logger.error(`Name change detection failed: ${(error as Error).stack ?? String(error)}`);
    }
  }

  private guildCreate(d: GatewayGuildCreateDispatchData, hold: Hold): void {
    if (d.unavailable) return;
    const members = d.members ?? [];
    const expectingMore = members.length < d.member_count;
    const run = this.newRun(d.id, expectingMore);
    this.outbox.observeFullView(this.observe(d.id, members), run, hold());
    if (!expectingMore) run.complete();
  }

  private membersChunk(d: GatewayGuildMembersChunkDispatchData, hold: Hold): void {
    const run = this.runs.get(d.guild_id) ?? this.newRun(d.guild_id, true);
    this.outbox.observeFullView(this.observe(d.guild_id, d.members), run, hold());
    const request = d.nonce ?? d.guild_id;
    const seen = (this.chunksSeen.get(request) ?? new Set<number>()).add(d.chunk_index);
    this.chunksSeen.set(request, seen);
    if (seen.size < d.chunk_count) return;
    this.chunksSeen.delete(request);
    run.complete();
  }

  private newRun(guildId: string, expectingMore: boolean): ReconciliationRun {
    const run = new ReconciliationRun(guildId, performance.now(), expectingMore, (done) => {
      if (this.runs.get(guildId) === done) this.runs.delete(guildId);
      const ms = performance.now() - done.startedAt;
      this.metrics.detectorReconciliations.inc();
      this.metrics.detectorReconciliationDuration.observe(ms / 1000);
      this.logger.log(
        `Reconciled server ${guildId}: compared ${done.members} member(s) with their last ` +
          `known names in ${Math.round(ms)} ms; ${done.changes} change(s) recorded`,
      );
    });
    this.runs.set(guildId, run);
    return run;
  }

  private observe(
    guildId: string,
    members: readonly Parameters<typeof observeMember>[1][],
  ): MemberObservation[] {
    const at = this.clock.now();
    const bot = this.gateway?.botUserId;
    return members
      .map((member) => observeMember(guildId, member, at))
      .filter((o): o is MemberObservation => o !== undefined && o.userId !== bot);
  }
}
