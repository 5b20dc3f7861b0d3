import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  Events,
  GatewayDispatchEvents,
  type Client,
  type GatewayDispatchPayload,
} from 'discord.js';
import { DrainLoop } from '../common/drain-loop.js';
import { DetectorOutbox } from './detector-outbox.js';
import { DETECTOR_SETTINGS, type DetectorSettings } from './detector.settings.js';
import { InterruptibleDelay } from './interruptible-delay.js';

/** Past the gateway's `retry_after`, so the next request lands after the window. */
const RATE_LIMIT_MARGIN_MS = 250;
const FAILED_FETCH_DELAY_MS = 5_000;

/**
 * Asks the gateway for the member list of every server whose GUILD_CREATE did not carry all
 * its members (a large server's carries only a few), so that reconciliation sees every
 * member: the chunks that answer are full views (NameChangeDetector reads them). Every
 * GUILD_CREATE asks again: after a start, a new session, an outage of the server, a join.
 * One server at a time, through discord.js (`guild.members.fetch()`, one REQUEST_GUILD_MEMBERS
 * each, within @discordjs/ws's send limit of the connection), and only while the members
 * already received are few enough to wait in memory. The gateway rate-limits these requests
 * (RATE_LIMITED with `retry_after`): the same server is asked again once the window passes.
 */
@Injectable()
export class MemberListRequester {
  private readonly logger = new Logger('DiscordDetector');

  constructor(
    @Inject(DETECTOR_SETTINGS) private readonly settings: DetectorSettings,
    private readonly outbox: DetectorOutbox,
  ) {}

  /** Starts requesting for `client`; returns the function that stops. */
  watch(client: Client): () => void {
    const queue = new GuildQueue(client, this.logger, this.settings, this.outbox);
    const onRaw = (packet: GatewayDispatchPayload) => {
      if (packet.t !== GatewayDispatchEvents.GuildCreate) return;
      const d = packet.d;
      if (!d.unavailable && (d.members ?? []).length < d.member_count) {
        queue.add(d.id);
      }
    };
    client.on(Events.Raw, onRaw);
    return () => {
      client.off(Events.Raw, onRaw);
      queue.stop();
    };
  }
}

class GuildQueue {
  private readonly queue: string[] = [];
  /** Asked for again while its request was under way: ask once more after it. */
  private readonly again = new Set<string>();
  private stopped = false;
  private readonly delay = new InterruptibleDelay();
  private readonly loop = new DrainLoop<string>(
    () => this.queue[0],
    (guildId) => this.request(guildId),
    (error) =>
      this.logger.error(`Member list requests stopped: ${(error as Error).stack ?? String(error)}`),
  );

  constructor(
    private readonly client: Client,
    private readonly logger: Logger,
    private readonly settings: DetectorSettings,
    private readonly outbox: DetectorOutbox,
  ) {}

  add(guildId: string): void {
    if (this.stopped) return;
    if (this.loop.running && this.queue[0] === guildId) this.again.add(guildId);
    else if (!this.queue.includes(guildId)) this.queue.push(guildId);
    this.loop.kick();
  }

  stop(): void {
    this.stopped = true;
    this.queue.length = 0;
    this.delay.interrupt();
    void this.loop.stop();
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
      if (this.stopped) return;
      const guild = this.client.guilds.cache.get(guildId);
      if (!guild?.available) return this.done(guildId);
      // Whatever asked for this server before now is answered by this request.
      this.again.delete(guildId);
      try {
        const members = await guild.members.fetch({ time: this.settings.memberChunkTimeoutMs });
        this.logger.log(`Received the ${members.size} members of server ${guild.id}`);
        return this.done(guildId);
      } catch (error) {
        const retryAfter = rateLimitRetryAfterMs(error);
        if (retryAfter !== undefined) {
          this.logger.log(
            `Member request for server ${guild.id} rate-limited; asking again in ${retryAfter} ms`,
          );
          await this.delay.wait(retryAfter + RATE_LIMIT_MARGIN_MS);
          continue;
        }
        failures += 1;
        if (failures >= this.settings.memberFetchAttempts) {
          this.logger.warn(
            `Could not fetch the members of server ${guild.id} (${(error as Error).message}); ` +
              'changes of members it did not send are found at its next full view',
          );
          return this.done(guildId);
        }
        await this.delay.wait(FAILED_FETCH_DELAY_MS * failures);
      }
    }
  }
}

/** discord.js rejects a rate-limited member request with a GatewayRateLimitError. */
function rateLimitRetryAfterMs(error: unknown): number | undefined {
  const { name, data } = (error ?? {}) as { name?: string; data?: { retry_after?: unknown } };
  if (name !== 'GatewayRateLimitError' || typeof data?.retry_after !== 'number') return undefined;
  return Math.ceil(data.retry_after * 1000);
}
