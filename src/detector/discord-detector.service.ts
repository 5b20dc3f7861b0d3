import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { GatewayCloseCodes, GatewayDispatchEvents } from 'discord.js';
import { withTimeout } from '../common/with-timeout.js';
import { DetectorMetrics } from './detector.metrics.js';
import { Leases } from '../redis/index.js';
import { DETECTOR_COORDINATION, type DetectorCoordination } from './detector-coordination.js';
import { DetectorOutbox } from './detector-outbox.js';
import { DETECTOR_SETTINGS, type DetectorSettings } from './detector.settings.js';
import { DiscordGateway } from './discord-gateway.js';
import { TokenRefusedError } from './gateway-bot.js';
import { MemberListRequester } from './member-list-requester.js';
import { NameChangeDetector } from './name-change-detector.js';
import { ShardHolder } from './shard-holder.js';

/** Past it, shutdown stops waiting for the gateway connections to close politely. */
const DESTROY_TIMEOUT_MS = 5_000;

const INTENT_HELP =
  'enable "Server Members Intent" under Bot → Privileged Gateway Intents in the Discord ' +
  'Developer Portal';

/** Why the gateway stopped; `refused` when retrying soon cannot help (an operator must act). */
interface ClientFailure {
  refused: boolean;
  message: string;
}

/**
 * The Discord detector: logs in (GET /gateway/bot), then runs the shards this instance
 * holds (ShardHolder: a lease per shard, spread evenly over the instances that run the
 * detector; all of them without Redis), their name changes going through the publish path.
 * Off without DISCORD_TOKEN, or with DETECTOR_ENABLED=false. A failed or refused login, or a
 * connection Discord closes for good, is logged and retried later with every shard let go
 * meanwhile, never in a tight loop and never crashing the app.
 */
@Injectable()
export class DiscordDetectorService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('DiscordDetector');
  /** The gateway connections of this instance, while logged in. */
  private gateway?: DiscordGateway;
  private holder?: ShardHolder;
  private unwatch: (() => void)[] = [];
  private failures = 0;
  private stopping = false;
  private retry?: NodeJS.Timeout;

  constructor(
    @Inject(DETECTOR_SETTINGS) private readonly settings: DetectorSettings,
    private readonly leases: Leases,
    @Inject(DETECTOR_COORDINATION) private readonly shared: DetectorCoordination,
    private readonly detector: NameChangeDetector,
    private readonly requester: MemberListRequester,
    private readonly outbox: DetectorOutbox,
    private readonly metrics: DetectorMetrics,
  ) {
    metrics.onCollect(() => {
      metrics.detectorShardCount.set(this.gateway?.shardCount ?? 0);
      metrics.detectorLiveInstances.set(this.holder?.liveInstances ?? 0);
    });
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
    void this.login();
  }

  /** Runs before the database and Redis connections close: let the shards go, then stop. */
  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.retry);
    await this.logout({ resumable: true });
    await this.outbox.stop();
  }

  private async login(): Promise<void> {
    if (this.stopping || this.gateway) return;
    const gateway = new DiscordGateway(
      { ...this.settings, token: this.settings.token! },
      {
        closed: (code, shardId, forGood) => {
          if (forGood) void this.fail(gateway, closeFailure(code, shardId));
        },
        identified: () => this.metrics.detectorSessionStarts.inc({ kind: 'identify' }),
        resumed: () => this.metrics.detectorSessionStarts.inc({ kind: 'resume' }),
        warn: (message) => this.logger.warn(message),
      },
      this.shared.identify,
      this.shared.sessions,
    );
    this.gateway = gateway;
    this.unwatch = [
      this.detector.watch(gateway),
      this.requester.watch(gateway),
      gateway.onDispatch((packet, shardId) => {
        if (packet.t !== GatewayDispatchEvents.Ready) return;
        this.failures = 0;
        const { user, guilds } = packet.d;
        this.logger.log(
          `Discord detector: shard ${shardId} of ${gateway.shardCount} on as ${user.username} ` +
            `(${user.id}), watching ${guilds.length} server(s)`,
        );
      }),
    ];
    this.logger.log('Discord detector: logging in to the gateway');
    try {
      const info = await gateway.connectInfo();
      if (this.gateway !== gateway) return;
      const { max_concurrency, remaining } = info.session_start_limit;
      this.logger.log(
        `Discord detector: ${gateway.shardCount} shard(s) (Discord recommends ${info.shards}), ` +
          `${max_concurrency} identify(ies) per 5 s, ${remaining} session start(s) left today`,
      );
      this.holder = new ShardHolder(
        gateway,
        this.leases,
        this.shared.instances,
        this.shared.token,
        this.settings.leaseMs,
        this.metrics,
      );
      this.holder.start();
    } catch (error) {
      await this.fail(gateway, loginFailure(error));
    }
  }

  private async fail(gateway: DiscordGateway, failure: ClientFailure): Promise<void> {
    // Already stopped: shutdown, or an earlier report of the same failure.
    if (this.gateway !== gateway) return;
    await this.logout({ resumable: false });
    const wait = failure.refused
      ? this.settings.refusedRetryMs
      : Math.min(this.settings.loginRetryMs * 2 ** this.failures, this.settings.loginRetryMaxMs);
    this.failures += 1;
    this.logger.error(`Discord detector: ${failure.message}; trying again in ${wait} ms`);
    if (!this.stopping) this.retry = setTimeout(() => void this.login(), wait);
  }

  /** Lets every shard go and closes their connections. */
  private async logout({ resumable }: { resumable: boolean }): Promise<void> {
    const gateway = this.gateway;
    if (!gateway) return;
    this.gateway = undefined;
    const holder = this.holder;
    this.holder = undefined;
    const closed = (holder?.stop({ resumable }) ?? Promise.resolve()).then(() =>
      gateway.stopAll({ resumable }),
    );
    await withTimeout(closed, DESTROY_TIMEOUT_MS).catch((error: Error) => {
      this.logger.warn(`Discord gateway did not close cleanly: ${error.message}`);
    });
    for (const stop of this.unwatch.splice(0)) stop();
    this.metrics.detectorShardsHeld.set(0);
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
