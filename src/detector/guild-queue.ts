import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { GatewayOpcodes } from 'discord.js';
import type { DiscordGateway } from './discord-gateway.js';
import type { MemberListRequester } from './member-list-requester.js';

/** Past the gateway's `retry_after`, so the next request lands after the window. */
const RATE_LIMIT_MARGIN_MS = 250;
const FAILED_FETCH_DELAY_MS = 5_000;

class RateLimited extends Error {
  constructor(readonly retryAfterMs: number) {
    super(`rate-limited for ${retryAfterMs} ms`);
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
export class GuildQueue {
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
