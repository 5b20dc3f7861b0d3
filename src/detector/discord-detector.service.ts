import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { Events, GatewayCloseCodes, type Client, type CloseEvent } from 'discord.js';
import { LeaseCompetition } from '../redis/lease-competition.js';
import { Leases } from '../redis/leases.js';
import { DetectorOutbox } from './detector-outbox.js';
import { DETECTOR_SETTINGS, type DetectorSettings } from './detector.settings.js';
import { DiscordClientFactory } from './discord-client.factory.js';
import { MemberListRequester } from './member-list-requester.js';
import { NameChangeDetector } from './name-change-detector.js';

/** Past it, shutdown stops waiting for the gateway connection to close politely. */
const DESTROY_TIMEOUT_MS = 5_000;

const INTENT_HELP =
  'enable "Server Members Intent" under Bot → Privileged Gateway Intents in the Discord ' +
  'Developer Portal';

/** Why the client stopped; `refused` when retrying soon cannot help (an operator must act). */
interface ClientFailure {
  refused: boolean;
  message: string;
}

/**
 * The Discord detector: while this instance holds the lease (always, without Redis), it runs
 * a gateway client whose name changes go through the publish path. Off without DISCORD_TOKEN.
 * A failed or refused login, or a connection Discord closes for good, is logged and retried
 * later with the lease given up meanwhile, never in a tight loop and never crashing the app.
 */
@Injectable()
export class DiscordDetectorService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('DiscordDetector');
  private client?: Client;
  private unwatch: (() => void)[] = [];
  private failures = 0;
  private stopping = false;
  /** Who runs the gateway client: exactly one instance at a time (always this one without Redis). */
  private readonly lease: LeaseCompetition;

  constructor(
    @Inject(DETECTOR_SETTINGS) private readonly settings: DetectorSettings,
    private readonly leases: Leases,
    private readonly clients: DiscordClientFactory,
    private readonly detector: NameChangeDetector,
    private readonly requester: MemberListRequester,
    private readonly outbox: DetectorOutbox,
  ) {
    this.lease = new LeaseCompetition(leases, 'detector', settings.leaseMs, {
      acquired: (lease) => {
        this.logger.log(`Holding the gateway lease (${lease.name}, ${settings.leaseMs} ms)`);
        lease.signal.addEventListener('abort', () => void this.stopClient(), { once: true });
        void this.startClient();
      },
    });
  }

  /** The gateway client this instance runs now, if any. */
  get activeClient(): Client | undefined {
    return this.client;
  }

  onApplicationBootstrap(): void {
    if (!this.settings.token) {
      this.logger.log('Discord detector: off (DISCORD_TOKEN is not set)');
      return;
    }
    this.logger.log(`Discord detector: on (${this.leases.description})`);
    this.lease.start();
  }

  /** Runs before the database and Redis connections close: stop detecting, then let go. */
  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    await this.stopClient();
    await this.lease.stop();
    await this.outbox.stop();
  }

  private async startClient(): Promise<void> {
    if (this.stopping || this.client) return;
    const client = this.clients.create();
    this.client = client;
    this.unwatch = [
      this.detector.watch(client),
      this.requester.watch(client),
      this.watchConnection(client),
    ];
    this.logger.log('Discord detector: logging in to the gateway');
    try {
      await client.login(this.settings.token);
    } catch (error) {
      await this.fail(client, loginFailure(error));
    }
  }

  private watchConnection(client: Client): () => void {
    const onReady = (ready: Client<true>) => {
      this.failures = 0;
      this.logger.log(
        `Discord detector: on as ${ready.user.tag} (${ready.user.id}), ` +
          `watching ${ready.guilds.cache.size} server(s)`,
      );
    };
    // Emitted only for close codes after which discord.js does not reconnect.
    const onDisconnect = (event: CloseEvent, shardId: number) =>
      void this.fail(client, closeFailure(event.code, shardId));
    const onShardError = (error: Error, shardId: number) =>
      this.logger.warn(`Discord shard ${shardId}: ${error.message}`);
    const onWarn = (message: string) => this.logger.warn(`Discord: ${message}`);
    client.once(Events.ClientReady, onReady);
    client.on(Events.ShardDisconnect, onDisconnect);
    client.on(Events.ShardError, onShardError);
    client.on(Events.Warn, onWarn);
    // Stays attached for the client's life: an 'error' nobody listens to would end the process.
    client.on(Events.Error, (error: Error) =>
      this.logger.error(`Discord client error: ${error.message}`),
    );
    return () => {
      client.off(Events.ClientReady, onReady);
      client.off(Events.ShardDisconnect, onDisconnect);
      client.off(Events.ShardError, onShardError);
      client.off(Events.Warn, onWarn);
    };
  }

  private async fail(client: Client, failure: ClientFailure): Promise<void> {
    // Already stopped: shutdown, a lost lease, or an earlier report of the same failure.
    if (this.client !== client) return;
    await this.stopClient();
    const wait = failure.refused
      ? this.settings.refusedRetryMs
      : Math.min(this.settings.loginRetryMs * 2 ** this.failures, this.settings.loginRetryMaxMs);
    this.failures += 1;
    this.logger.error(`Discord detector: ${failure.message}; trying again in ${wait} ms`);
    if (!this.stopping) await this.lease.yield(wait);
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    if (!client) return;
    this.client = undefined;
    for (const stop of this.unwatch.splice(0)) stop();
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        client.destroy(),
        new Promise((resolve) => (timer = setTimeout(resolve, DESTROY_TIMEOUT_MS))),
      ]);
    } catch (error) {
      this.logger.warn(`Discord client did not close cleanly: ${(error as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
    this.logger.log('Discord detector: disconnected from the gateway');
  }
}

function loginFailure(error: unknown): ClientFailure {
  const { code, message = String(error) } = (error ?? {}) as { code?: unknown; message?: string };
  if (code === 'TokenInvalid' || /authentication failed/i.test(message)) {
    return {
      refused: true,
      message: 'Discord refused the login: DISCORD_TOKEN is not a valid bot token',
    };
  }
  if (/disallowed intents/i.test(message)) {
    return {
      refused: true,
      message: `Discord refused the login: the bot may not use the Server Members intent; ${INTENT_HELP}`,
    };
  }
  return { refused: false, message: `Discord login failed: ${message}` };
}

function closeFailure(code: number, shardId: number): ClientFailure {
  switch (code as GatewayCloseCodes) {
    case GatewayCloseCodes.AuthenticationFailed:
      return {
        refused: true,
        message: 'Discord closed the gateway: DISCORD_TOKEN is not a valid bot token',
      };
    case GatewayCloseCodes.DisallowedIntents:
      return {
        refused: true,
        message: `Discord closed the gateway: the bot may not use the Server Members intent; ${INTENT_HELP}`,
      };
    default:
      return {
        refused: false,
        message: `Discord closed the gateway connection of shard ${shardId} for good (code ${code}, ${GatewayCloseCodes[code] ?? 'unknown'})`,
      };
  }
}
