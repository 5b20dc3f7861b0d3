import { Inject, Injectable, Logger } from '@nestjs/common';
import { Events, type Client, type Guild } from 'discord.js';
import { DETECTOR_SETTINGS, type DetectorSettings } from './detector.settings.js';
import { InterruptibleDelay } from './interruptible-delay.js';

/** Past the gateway's `retry_after`, so the next request lands after the window. */
const RATE_LIMIT_MARGIN_MS = 250;
const FAILED_FETCH_DELAY_MS = 5_000;

/**
 * Fills a client's member cache, so a change by a member who has not spoken is seen: without
 * the cached old object discord.js reports no change at all. GUILD_CREATE carries only a few
 * members; the rest come by a gateway member request, one guild at a time, after the client
 * is ready and for every guild that arrives later. The gateway rate-limits these requests
 * (RATE_LIMITED with `retry_after`): the same guild is asked again once the window passes.
 */
@Injectable()
export class MemberCacheWarmer {
  private readonly logger = new Logger('DiscordDetector');

  constructor(@Inject(DETECTOR_SETTINGS) private readonly settings: DetectorSettings) {}

  /** Starts warming `client`'s cache; returns the function that stops. */
  watch(client: Client): () => void {
    const queue = new GuildQueue(client, this.logger, this.settings.memberFetchAttempts);
    const onReady = () => queue.add([...client.guilds.cache.keys()]);
    const onGuildCreate = (guild: Guild) => queue.add([guild.id]);
    // A guild back from an outage (or after a new session): its members may have changed.
    const onGuildAvailable = (guild: Guild) => {
      if (client.isReady()) queue.add([guild.id]);
    };
    client.on(Events.ClientReady, onReady);
    client.on(Events.GuildCreate, onGuildCreate);
    client.on(Events.GuildAvailable, onGuildAvailable);
    return () => {
      client.off(Events.ClientReady, onReady);
      client.off(Events.GuildCreate, onGuildCreate);
      client.off(Events.GuildAvailable, onGuildAvailable);
      queue.stop();
    };
  }
}

class GuildQueue {
  private readonly queue: string[] = [];
  private running = false;
  private stopped = false;
  private readonly delay = new InterruptibleDelay();

  constructor(
    private readonly client: Client,
    private readonly logger: Logger,
    private readonly attempts: number,
  ) {}

  add(guildIds: string[]): void {
    for (const id of guildIds) {
      if (!this.queue.includes(id)) this.queue.push(id);
    }
    if (!this.running && !this.stopped) void this.drain();
  }

  stop(): void {
    this.stopped = true;
    this.queue.length = 0;
    this.delay.interrupt();
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      let failures = 0;
      while (!this.stopped && this.queue.length > 0) {
        const guild = this.client.guilds.cache.get(this.queue[0]);
        if (!guild?.available || guild.members.cache.size >= guild.memberCount) {
          this.queue.shift();
          continue;
        }
        try {
          const members = await guild.members.fetch();
          this.logger.log(`Cached ${members.size} members of server ${guild.id}`);
          this.queue.shift();
          failures = 0;
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
          if (failures >= this.attempts) {
            this.logger.warn(
              `Could not fetch the members of server ${guild.id} (${(error as Error).message}); ` +
                'changes of its uncached members will not be seen',
            );
            this.queue.shift();
            failures = 0;
          } else {
            await this.delay.wait(FAILED_FETCH_DELAY_MS * failures);
          }
        }
      }
    } catch (error) {
      this.logger.error(`Member cache warm-up stopped: ${(error as Error).stack ?? String(error)}`);
    } finally {
      this.running = false;
    }
  }
}

/** discord.js rejects a rate-limited member request with a GatewayRateLimitError. */
function rateLimitRetryAfterMs(error: unknown): number | undefined {
  const { name, data } = (error ?? {}) as { name?: string; data?: { retry_after?: unknown } };
  if (name !== 'GatewayRateLimitError' || typeof data?.retry_after !== 'number') return undefined;
  return Math.ceil(data.retry_after * 1000);
}
