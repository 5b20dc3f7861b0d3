import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { GatewayCloseCodes, GatewayDispatchEvents } from 'discord.js';
import { LeaseCompetition } from '../redis/lease-competition.js';
import { Leases } from '../redis/leases.js';
import { DetectorOutbox } from './detector-outbox.js';
import { DETECTOR_SETTINGS, type DetectorSettings } from './detector.settings.js';
import { DiscordGateway } from './discord-gateway.js';
import { TokenRefusedError } from './gateway-bot.js';
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
 * the gateway connections (DiscordGateway) whose name changes go through the publish path. Off without DISCORD_TOKEN.
 * A failed or refused login, or a connection Discord closes for good, is logged and retried
 * later with the lease given up meanwhile, never in a tight loop and never crashing the app.
 */
@Injectable()
export class DiscordDetectorService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('DiscordDetector');
  private gateway?: DiscordGateway;
  private unwatch: (() => void)[] = [];
  private failures = 0;
  private stopping = false;
  /** Who runs the gateway connections: exactly one instance at a time (always this one without Redis). */
  private readonly lease: LeaseCompetition;

  constructor(
    @Inject(DETECTOR_SETTINGS) private readonly settings: DetectorSettings,
    private readonly leases: Leases,
    private readonly detector: NameChangeDetector,
    private readonly requester: MemberListRequester,
    private readonly outbox: DetectorOutbox,
  ) {
    this.lease = new LeaseCompetition(leases, 'detector', settings.leaseMs, {
      acquired: (lease) => {
        this.logger.log(`Holding the gateway lease (${lease.name}, ${settings.leaseMs} ms)`);
        lease.signal.addEventListener('abort', () => void this.stopGateway(), { once: true });
        void this.startGateway();
      },
    });
  }

  /** The gateway connections this instance runs now, if any. */
  get activeGateway(): DiscordGateway | undefined {
    return this.gateway;
  }

  onApplicationBootstrap(): void {
    if (!this.settings.token) {
      this.logger.log('Discord detector: off (DISCORD_TOKEN is not set)');
      return;
    }
    if (!this.settings.enabled) {
      this.logger.log('Discord detector: off on this instance (DETECTOR_ENABLED=false)');
      return;
    }
    this.logger.log(`Discord detector: on (${this.leases.description})`);
    this.lease.start();
  }

  /** Runs before the database and Redis connections close: stop detecting, then let go. */
  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    await this.stopGateway();
    await this.lease.stop();
    await this.outbox.stop();
  }

  private async startGateway(): Promise<void> {
    if (this.stopping || this.gateway) return;
    const gateway = new DiscordGateway(
      {
        token: this.settings.token!,
        apiUrl: this.settings.apiUrl,
        gatewayUrl: this.settings.gatewayUrl,
        shardCount: this.settings.shardCount,
      },
      {
        closed: (code, shardId, forGood) => {
          if (forGood) void this.fail(gateway, closeFailure(code, shardId));
        },
        identified: () => undefined,
        resumed: () => undefined,
        warn: (message) => this.logger.warn(message),
      },
    );
    this.gateway = gateway;
    this.unwatch = [
      this.detector.watch(gateway),
      this.requester.watch(gateway),
      gateway.onDispatch((packet, shardId) => {
        if (packet.t !== GatewayDispatchEvents.Ready) return;
        this.failures = 0;
        const { user, guilds, shard } = packet.d;
        this.logger.log(
          `Discord detector: shard ${shardId} of ${shard?.[1] ?? 1} on as ${user.username} ` +
            `(${user.id}), watching ${guilds.length} server(s)`,
        );
      }),
    ];
    this.logger.log('Discord detector: logging in to the gateway');
    try {
      const info = await gateway.connectInfo();
      if (this.gateway !== gateway) return;
      const shards = gateway.shardCount;
      this.logger.log(
        `Discord detector: ${shards} shard(s) (Discord recommends ${info.shards}), ` +
          `${info.session_start_limit.max_concurrency} identify(ies) per 5 s, ` +
          `${info.session_start_limit.remaining} session start(s) left today`,
      );
      for (let shardId = 0; shardId < shards; shardId++) await gateway.startShard(shardId);
    } catch (error) {
      await this.fail(gateway, loginFailure(error));
    }
  }

  private async fail(gateway: DiscordGateway, failure: ClientFailure): Promise<void> {
    // Already stopped: shutdown, a lost lease, or an earlier report of the same failure.
    if (this.gateway !== gateway) return;
    await this.stopGateway();
    const wait = failure.refused
      ? this.settings.refusedRetryMs
      : Math.min(this.settings.loginRetryMs * 2 ** this.failures, this.settings.loginRetryMaxMs);
    this.failures += 1;
    this.logger.error(`Discord detector: ${failure.message}; trying again in ${wait} ms`);
    if (!this.stopping) await this.lease.yield(wait);
  }

  private async stopGateway(): Promise<void> {
    const gateway = this.gateway;
    if (!gateway) return;
    this.gateway = undefined;
    for (const stop of this.unwatch.splice(0)) stop();
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        gateway.stopAll({ resumable: false }),
        new Promise((resolve) => (timer = setTimeout(resolve, DESTROY_TIMEOUT_MS))),
      ]);
    } catch (error) {
      this.logger.warn(`Discord gateway did not close cleanly: ${(error as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
    this.logger.log('Discord detector: disconnected from the gateway');
  }
}

function loginFailure(error: unknown): ClientFailure {
  if (error instanceof TokenRefusedError) return { refused: true, message: error.message };
  return { refused: false, message: `Discord login failed: ${(error as Error).message}` };
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
