import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { GatewayDispatchEvents, GatewayOpcodes, type GatewayDispatchPayload } from 'discord.js';
import { DetectorOutbox } from './detector-outbox.js';
import { DETECTOR_SETTINGS, type DetectorSettings } from './detector.settings.js';
import type { DiscordGateway } from './discord-gateway.js';
import type { DispatchContext } from './shard-connection.js';

/** Past the gateway's `retry_after`, so the next request lands after the window. */
const RATE_LIMIT_MARGIN_MS = 250;
const FAILED_FETCH_DELAY_MS = 5_000;

class RateLimited extends Error {
  constructor(readonly retryAfterMs: number) {
    super(`rate-limited for ${retryAfterMs} ms`);
  }
}

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
          const { meta, retry_after } = packet.d as {
            meta: { nonce?: string };
            retry_after: number;
          };
          queues.get(shardId)?.rateLimited(meta.nonce, Math.ceil(retry_after * 1000));
          break;
        }
        default:
          break;
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

/** The answer to the member request under way, as its chunks come. */
type Answer = PromiseWithResolvers<number> & {
  nonce: string;
  chunks: Set<number>;
  members: number;
  timer?: NodeJS.Timeout;
};

/**
 * One shard's servers waiting for their member list, asked for one at a time: the first is
 * the one under way; asked for again meanwhile, a server is asked for once more after it.
 */
class GuildQueue {
  private readonly queue: string[] = [];
  private answer?: Answer;
  /** Aborted at `stop()`: ends the loop, and a wait between requests at once. */
  private readonly stopping = new AbortController();
  /** Ends the loop's wait for a server (set while it waits). */
  private wake?: () => void;

  constructor(
    private readonly requester: MemberListRequester,
    private readonly gateway: DiscordGateway,
    private readonly shardId: number,
    /** The shard of each available server. */
    private readonly shardOf: ReadonlyMap<string, number>,
  ) {
    void this.requestAll();
  }

  add(guildId: string): void {
    if (this.stopping.signal.aborted) return;
    if (!this.queue.includes(guildId, 1)) this.queue.push(guildId);
    this.woken();
  }

  /** A GUILD_MEMBERS_CHUNK: the answer is complete once every chunk has come. */
  chunk(nonce: string | undefined, index: number, count: number, members: number): void {
    const answer = this.answer;
    if (!answer || answer.nonce !== nonce || answer.chunks.has(index)) return;
    answer.chunks.add(index);
    answer.members += members;
    if (answer.chunks.size < count) this.arm(answer);
    else answer.resolve(answer.members);
  }

  rateLimited(nonce: string | undefined, retryAfterMs: number): void {
    if (this.answer && this.answer.nonce === nonce)
      this.answer.reject(new RateLimited(retryAfterMs));
  }

  stop(): void {
    this.queue.length = 0;
    this.stopping.abort();
    this.answer?.reject(new Error('stopped'));
    this.woken();
  }

  private woken(): void {
    this.wake?.();
    this.wake = undefined;
  }

  private async requestAll(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      const guildId = this.queue[0];
      if (guildId === undefined) await new Promise<void>((resolve) => (this.wake = resolve));
      else {
        // Every failure that can be expected is handled within: anything else costs the server.
        await this.request(guildId).catch((error: unknown) =>
          this.requester.logger.error(
            `Member list requests stopped: ${(error as Error).stack ?? String(error)}`,
          ),
        );
        this.queue.shift();
      }
    }
  }

  private wait(ms: number): Promise<void> {
    return delay(ms, undefined, { signal: this.stopping.signal }).catch(() => undefined);
  }

  /** The first server's members, asked for until they come, it is given up on, or shutdown. */
  private async request(guildId: string): Promise<void> {
    const { logger, settings, outbox } = this.requester;
    let failures = 0;
    for (;;) {
      await outbox.whenReconcilingBelow(settings.reconcileBacklogLimit);
      // Stopped, or the server gone from the shard: nothing to ask.
      if (this.stopping.signal.aborted || this.shardOf.get(guildId) !== this.shardId) return;
      // Whatever asked for this server before now is answered by this request.
      const again = this.queue.indexOf(guildId, 1);
      if (again > 0) this.queue.splice(again, 1);
      try {
        const members = await this.ask(guildId);
        logger.log(`Received the ${members} members of server ${guildId}`);
        return;
      } catch (error) {
        if (this.stopping.signal.aborted) return;
        if (error instanceof RateLimited) {
          logger.log(
            `Member request for server ${guildId} rate-limited; asking again in ${error.retryAfterMs} ms`,
          );
          await this.wait(error.retryAfterMs + RATE_LIMIT_MARGIN_MS);
          continue;
        }
        failures += 1;
        if (failures >= settings.memberFetchAttempts) {
          logger.warn(
            `Could not fetch the members of server ${guildId} (${(error as Error).message}); ` +
              'changes of members it did not send are found at its next full view',
          );
          return;
        }
        await this.wait(FAILED_FETCH_DELAY_MS * failures);
      } finally {
        clearTimeout(this.answer?.timer);
        this.answer = undefined;
      }
    }
  }

  /**
   * Sends one member request; resolves with the member count once every chunk has come,
   * rejects when the gateway rate-limits it, or when `memberChunkTimeoutMs` pass without a
   * chunk.
   */
  private async ask(guildId: string): Promise<number> {
    const nonce = randomUUID().replaceAll('-', '').slice(0, 32);
    const answer: Answer = {
      ...Promise.withResolvers<number>(),
      nonce,
      chunks: new Set(),
      members: 0,
    };
    answer.promise.catch(() => undefined);
    this.answer = answer;
    this.arm(answer);
    await this.gateway.send(this.shardId, {
      op: GatewayOpcodes.RequestGuildMembers,
      d: { guild_id: guildId, query: '', limit: 0, nonce },
    });
    return answer.promise;
  }

  private arm(answer: Answer): void {
    clearTimeout(answer.timer);
    const ms = this.requester.settings.memberChunkTimeoutMs;
    answer.timer = setTimeout(
      () => answer.reject(new Error(`no member chunk within ${ms} ms`)),
      ms,
    );
  }
}
