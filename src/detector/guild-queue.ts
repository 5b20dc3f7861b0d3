import type { Logger } from '@nestjs/common';
import { setTimeout as delay } from 'node:timers/promises';
import { DrainLoop } from '../common/drain-loop.js';
import type { DetectorOutbox } from './detector-outbox.js';
import type { DetectorSettings } from './detector.settings.js';

/** Past the gateway's `retry_after`, so the next request lands after the window. */
const RATE_LIMIT_MARGIN_MS = 250;
const FAILED_FETCH_DELAY_MS = 5_000;

class RateLimited extends Error {
  constructor(readonly retryAfterMs: number) {
    super(`rate-limited for ${retryAfterMs} ms`);
  }
}

/**
 * The answer to one member request: resolves with the member count once every chunk has
 * come, rejects when the gateway rate-limits it, or when `timeoutMs` pass without a chunk.
 */
export class MemberListAnswer {
  private readonly answer = Promise.withResolvers<number>();
  readonly done = this.answer.promise;
  private timer?: NodeJS.Timeout;
  private readonly seen = new Set<number>();
  private members = 0;

  constructor(private readonly timeoutMs: number) {
    this.done.catch(() => undefined);
    this.arm();
  }

  chunk(index: number, count: number, members: number): void {
    if (this.seen.has(index)) return;
    this.seen.add(index);
    this.members += members;
    if (this.seen.size < count) return this.arm();
    clearTimeout(this.timer);
    this.answer.resolve(this.members);
  }

  rateLimited(retryAfterMs: number): void {
    this.fail(new RateLimited(retryAfterMs));
  }

  fail(error: Error): void {
    clearTimeout(this.timer);
    this.answer.reject(error);
  }

  private arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(
      () => this.answer.reject(new Error(`no member chunk within ${this.timeoutMs} ms`)),
      this.timeoutMs,
    );
  }
}

/** Sends one member request for `guildId`, whose answer arrives through `answer`. */
export type SendMemberRequest = (guildId: string, answer: MemberListAnswer) => Promise<void>;

/** One shard's servers waiting for their member list, asked for one at a time. */
export class GuildQueue {
  private readonly queue: string[] = [];
  /** Asked for again while its request was under way: ask once more after it. */
  private readonly again = new Set<string>();
  private current?: MemberListAnswer;
  /** Aborted at `stop()`: ends a wait between requests at once. */
  private readonly stopping = new AbortController();
  private readonly loop = new DrainLoop<string>(
    () => this.queue[0],
    (guildId) => this.request(guildId),
    (error) =>
      this.logger.error(`Member list requests stopped: ${(error as Error).stack ?? String(error)}`),
  );

  constructor(
    private readonly logger: Logger,
    private readonly settings: DetectorSettings,
    private readonly outbox: Pick<DetectorOutbox, 'whenReconcilingBelow'>,
    private readonly send: SendMemberRequest,
    /** Whether the server is available on the shard now. */
    private readonly available: (guildId: string) => boolean,
  ) {}

  add(guildId: string): void {
    if (this.stopping.signal.aborted) return;
    if (this.loop.running && this.queue[0] === guildId) this.again.add(guildId);
    else if (!this.queue.includes(guildId)) this.queue.push(guildId);
    this.loop.kick();
  }

  stop(): void {
    this.queue.length = 0;
    this.stopping.abort();
    this.current?.fail(new Error('stopped'));
    void this.loop.stop();
  }

  private wait(ms: number): Promise<void> {
    return delay(ms, undefined, { signal: this.stopping.signal }).catch(() => undefined);
  }

  private done(guildId: string): void {
    this.queue.shift();
    if (this.again.delete(guildId) && !this.queue.includes(guildId)) this.queue.push(guildId);
  }

  /** The first server's members, asked for until they come, it is given up on, or shutdown. */
  private async request(guildId: string): Promise<void> {
    let failures = 0;
    for (;;) {
      await this.outbox.whenReconcilingBelow(this.settings.reconcileBacklogLimit);
      if (this.stopping.signal.aborted) return;
      if (!this.available(guildId)) return this.done(guildId);
      // Whatever asked for this server before now is answered by this request.
      this.again.delete(guildId);
      const answer = new MemberListAnswer(this.settings.memberChunkTimeoutMs);
      this.current = answer;
      try {
        await this.send(guildId, answer);
        const members = await answer.done;
        this.logger.log(`Received the ${members} members of server ${guildId}`);
        return this.done(guildId);
      } catch (error) {
        if (this.stopping.signal.aborted) return;
        if (error instanceof RateLimited) {
          this.logger.log(
            `Member request for server ${guildId} rate-limited; asking again in ${error.retryAfterMs} ms`,
          );
          await this.wait(error.retryAfterMs + RATE_LIMIT_MARGIN_MS);
          continue;
        }
        failures += 1;
        if (failures >= this.settings.memberFetchAttempts) {
          this.logger.warn(
            `Could not fetch the members of server ${guildId} (${(error as Error).message}); ` +
              'changes of members it did not send are found at its next full view',
          );
          return this.done(guildId);
        }
        await this.wait(FAILED_FETCH_DELAY_MS * failures);
      } finally {
        this.current = undefined;
      }
    }
  }
}
