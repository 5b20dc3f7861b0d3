import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
} from '@nestjs/common';
import { GatewayCloseCodes, GatewayDispatchEvents } from 'discord.js';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { withTimeout } from '../common/with-timeout.js';
import { DetectorMetrics } from './detector.metrics.js';
import { Leases, RedisConnections, type Lease } from '../redis/index.js';
import { DetectorInstances } from './detector-instances.js';
import { DetectorOutbox } from './detector-outbox.js';
import { DETECTOR_SETTINGS, type DetectorSettings } from './detector.settings.js';
import { DiscordGateway, TokenRefusedError } from './discord-gateway.js';
import { LocalIdentifyGate, RedisIdentifyGate, type IdentifyGate } from './identify-gate.js';
import { MemberListRequester } from './member-list-requester.js';
import { NameChangeDetector } from './name-change-detector.js';
import { SessionStore } from './session-store.js';
import { planShards } from './shard-plan.js';

/** Why a shard is let go of, as counted in the metrics. */
type Handover = 'rebalance' | 'stop' | 'lost' | 'failed';

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
 * holds, their name changes going through the publish path. Off without DISCORD_TOKEN, or
 * with DETECTOR_ENABLED=false. A failed or refused login, or a connection Discord closes for
 * good, is logged and retried later with every shard let go meanwhile, never in a tight loop
 * and never crashing the app.
 *
 * Which shards this instance runs: a lease per shard (the shared `Leases`), and a heartbeat
 * every third of the lease (at most 2 s) that announces this instance (`DetectorInstances`)
 * and follows `planShards` (take free shards, hand one over): spread evenly over the
 * instances that run the detector, all of them without Redis. A shard is started only under
 * its lease, and its lease released only once its connection is closed (a handover closes it
 * keeping the session resumable, for the next holder to resume): a shard is never connected
 * twice. A lease lost (not renewed in time) stops its shard at once.
 *
 * What the instances share: who is live, the identify limits, the shards' sessions. In Redis
 * (one connection, keys under the hash tag `{<prefix>:detector}`, so a script may touch
 * several on a Redis Cluster), or in memory for a single instance.
 */
@Injectable()
export class DiscordDetectorService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('DiscordDetector');
  /** This instance in the detector's keys. */
  private readonly token = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly instances: DetectorInstances;
  /** Shared by every login of the instance (and across instances when it is Redis). */
  private readonly identify: IdentifyGate;
  private readonly sessions: SessionStore;
  /** The gateway connections of this instance, while logged in. */
  private gateway?: DiscordGateway;
  private unwatch: (() => void)[] = [];
  private failures = 0;
  private stopping = false;
  private retry?: NodeJS.Timeout;
  /** The shards held now, by their lease. */
  private readonly held = new Map<number, Lease>();
  /** The heartbeat's, set once a login holds shards. */
  private timer?: NodeJS.Timeout;
  private tick: Promise<void> = Promise.resolve();
  private cooldownUntil = 0;
  /** Instances running the detector, as of the last heartbeat. */
  private liveInstances = 0;

  constructor(
    @Inject(DETECTOR_SETTINGS) private readonly settings: DetectorSettings,
    private readonly leases: Leases,
    redis: RedisConnections,
    private readonly detector: NameChangeDetector,
    private readonly requester: MemberListRequester,
    private readonly outbox: DetectorOutbox,
    private readonly metrics: DetectorMetrics,
  ) {
    // No Redis connection unless the detector runs here.
    const shared =
      redis.enabled && settings.token && settings.enabled ? redis.create('detector') : undefined;
    const keyBase = redis.slotKey('detector');
    this.instances = new DetectorInstances(shared, `${keyBase}:instances`);
    this.identify = shared ? new RedisIdentifyGate(shared, keyBase) : new LocalIdentifyGate();
    this.sessions = new SessionStore(shared, keyBase, this.token);
    metrics.onCollect(() => {
      metrics.detectorShardCount.set(this.gateway?.shardCount ?? 0);
      metrics.detectorLiveInstances.set(this.liveInstances);
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
        started: (kind) => this.metrics.detectorSessionStarts.inc({ kind }),
        warn: (message) => this.logger.warn(message),
      },
      this.identify,
      this.sessions,
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
      this.cooldownUntil = 0;
      this.schedule(gateway, 0);
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

  /** Lets every shard go (sessions kept resumable unless `resumable` is false) and closes their connections. */
  private async logout({ resumable }: { resumable: boolean }): Promise<void> {
    const gateway = this.gateway;
    if (!gateway) return;
    this.gateway = undefined;
    const holding = this.timer !== undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    // All of this login's: none is taken once `gateway` is gone (a late one is released at once).
    const held = [...this.held];
    const closed = this.tick
      .then(() =>
        Promise.all(held.map(([id, lease]) => this.letGo(gateway, id, lease, 'stop', resumable))),
      )
      .then(async () => {
        if (!holding) return;
        await this.instances.leave(this.token).catch((error: Error) => {
          this.logger.warn(`Could not leave the detector instances: ${error.message}`);
        });
      })
      .then(() => gateway.stopAll({ resumable }));
    await withTimeout(closed, DESTROY_TIMEOUT_MS).catch((error: Error) => {
      this.logger.warn(`Discord gateway did not close cleanly: ${error.message}`);
    });
    for (const stop of this.unwatch.splice(0)) stop();
    this.liveInstances = 0;
    this.metrics.detectorShardsHeld.set(0);
    this.logger.log('Discord detector: disconnected from the gateway');
  }

  private get everyMs(): number {
    return Math.max(100, Math.min(2_000, Math.floor(this.settings.leaseMs / 3)));
  }

  private schedule(gateway: DiscordGateway, ms: number): void {
    // A login's last tick: the next login's heartbeat is its own.
    if (this.gateway !== gateway) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.tick = this.heartbeat(gateway)
        .catch((error: Error) => this.logger.warn(`Detector heartbeat failed: ${error.message}`))
        .finally(() => this.schedule(gateway, this.everyMs));
    }, ms);
  }

  private async heartbeat(gateway: DiscordGateway): Promise<void> {
    const { leaseMs } = this.settings;
    const live = await this.instances.heartbeat(this.token, this.held.size, leaseMs);
    if (this.gateway !== gateway) return;
    this.liveInstances = live.length;
    const self = live.find((i) => i.token === this.token);
    const plan = planShards({
      shardCount: gateway.shardCount,
      self: this.token,
      held: this.held.size,
      live,
      settleMs: leaseMs,
      coolingDown: Date.now() < this.cooldownUntil,
    });
    if (plan.release > 0) {
      const [shardId, lease] = [...this.held].sort(([a], [b]) => b - a)[0];
      this.cooldownUntil = Date.now() + leaseMs;
      this.logger.log(
        `Handing shard ${shardId} over to even out the shards over ${live.length} instance(s)`,
      );
      await this.letGo(gateway, shardId, lease, 'rebalance', true);
      return;
    }
    // Not before a second heartbeat, so instances that start together see each other.
    if (plan.take === 0 || (self?.ageMs ?? 0) < this.everyMs) return;
    await this.takeFree(gateway, plan.take);
  }

  /** Tries the shards not held here, from a place of its own, until `count` are taken. */
  private async takeFree(gateway: DiscordGateway, count: number): Promise<void> {
    const total = gateway.shardCount;
    const { leaseMs } = this.settings;
    const offset = Math.floor(Math.random() * total);
    let taken = 0;
    for (let i = 0; i < total && taken < count && this.gateway === gateway; i++) {
      const shardId = (offset + i) % total;
      if (this.held.has(shardId)) continue;
      const { lease } = await this.leases.tryAcquire(`detector-shard:${shardId}`, leaseMs);
      if (!lease) continue;
      if (this.gateway !== gateway) {
        await lease.release();
        return;
      }
      taken += 1;
      this.hold(gateway, shardId, lease);
    }
  }

  private hold(gateway: DiscordGateway, shardId: number, lease: Lease): void {
    this.held.set(shardId, lease);
    this.metrics.detectorShardsHeld.set(this.held.size);
    lease.signal.onabort = () => {
      this.logger.warn(`Lost the lease of shard ${shardId}: stopping it`);
      // Closed resumable: the next holder may resume; its session is not written over.
      void this.letGo(gateway, shardId, lease, 'lost', true);
    };
    this.logger.log(`Running shard ${shardId} of ${gateway.shardCount}`);
    void gateway.startShard(shardId).catch((error: Error) => {
      // Its lease goes back, for this instance or another to try again at a next heartbeat.
      this.logger.warn(`Could not start shard ${shardId}: ${error.message}; letting it go`);
      void this.letGo(gateway, shardId, lease, 'failed', true);
    });
  }

  /** Closes the shard's connection, then releases its lease (unless let go of already). */
  private async letGo(
    gateway: DiscordGateway,
    shardId: number,
    lease: Lease,
    reason: Handover,
    resumable: boolean,
  ): Promise<void> {
    if (this.held.get(shardId) !== lease) return;
    this.held.delete(shardId);
    this.metrics.detectorShardsHeld.set(this.held.size);
    this.metrics.detectorHandovers.inc({ reason });
    await gateway.stopShard(shardId, { resumable }).catch((error: Error) => {
      this.logger.warn(`Shard ${shardId} did not close cleanly: ${error.message}`);
    });
    await lease.release();
  }
}

function loginFailure(error: unknown): ClientFailure {
  if (error instanceof TokenRefusedError) return { refused: true, message: error.message };
  return { refused: false, message: `Discord login failed: ${(error as Error).message}` };
}

/** Close codes after which retrying soon cannot help: what the operator is told. */
const REFUSED_CLOSES: Partial<Record<number, string>> = {
  [GatewayCloseCodes.AuthenticationFailed]: 'DISCORD_TOKEN is not a valid bot token',
  [GatewayCloseCodes.DisallowedIntents]: `the bot may not use the Server Members intent; ${INTENT_HELP}`,
};

function closeFailure(code: number, shardId: number): ClientFailure {
  const refused = REFUSED_CLOSES[code];
  if (refused) return { refused: true, message: `Discord closed the gateway: ${refused}` };
  return {
    refused: false,
    message: `Discord closed the gateway connection of shard ${shardId} for good (code ${code}, ${GatewayCloseCodes[code] ?? 'unknown'})`,
  };
}
