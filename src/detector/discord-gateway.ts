import { DefaultWebSocketManagerOptions, type FetchingStrategyOptions } from '@discordjs/ws';
import { GatewayIntentBits, type APIGatewayBotInfo, type GatewaySendPayload } from 'discord.js';
import type { DetectorSettings } from './detector.settings.js';
import { fetchGatewayBot } from './gateway-bot.js';
import { LocalIdentifyGate, type IdentifyGate } from './identify-gate.js';
import { SessionStore } from './session-store.js';
import { ShardConnection, type ShardEvents } from './shard-connection.js';

/** `Guilds` (the servers, with their members) and `GuildMembers` (privileged: member updates and requests). */
export const DETECTOR_INTENTS = GatewayIntentBits.Guilds | GatewayIntentBits.GuildMembers;

type DispatchListener = ShardEvents['dispatch'];
type ShardListener = (shardId: number) => void;

/** DISCORD_TOKEN, DISCORD_API_URL, DISCORD_GATEWAY_URL, DETECTOR_SHARD_COUNT (unset: Discord's count). */
type GatewayLogin = Pick<DetectorSettings, 'apiUrl' | 'gatewayUrl' | 'shardCount'> & {
  token: string;
};

/**
 * The gateway connections of this instance, one per shard it runs, and what they say:
 * raw dispatches, nothing cached (no servers, members, users, presences or messages). The
 * detector reads members from the dispatches and compares them with the last known names in
 * the database, so memory does not grow with the members watched. `login` asks Discord
 * where the gateway is and how many shards there are; then shards are started and stopped
 * one by one.
 */
export class DiscordGateway {
  private info?: APIGatewayBotInfo;
  private shardTotal = 0;
  private readonly connections = new Map<number, ShardConnection>();
  private readonly dispatchListeners = new Set<DispatchListener>();
  private readonly stopListeners = new Set<ShardListener>();

  constructor(
    private readonly login: GatewayLogin,
    private readonly events: Omit<ShardEvents, 'dispatch'>,
    /** Shared by every login of the instance (and across instances when it is Redis). */
    private readonly identify: IdentifyGate = new LocalIdentifyGate(),
    private readonly sessions: SessionStore = new SessionStore(),
  ) {}

  /** GET /gateway/bot; rejects as `fetchGatewayBot` does. */
  async connectInfo(): Promise<APIGatewayBotInfo> {
    const info = await fetchGatewayBot(this.login.token, this.login.apiUrl, this.login.gatewayUrl);
    await this.identify.configure(info.session_start_limit);
    this.info = info;
    this.shardTotal = this.login.shardCount ?? info.shards;
    return info;
  }

  /** The shard count of this login (0 before `connectInfo`). */
  get shardCount(): number {
    return this.shardTotal;
  }

  /** The bot's user id, once a shard has had a READY (or loaded a stored session). */
  get botUserId(): string | undefined {
    for (const connection of this.connections.values()) {
      if (connection.botUserId) return connection.botUserId;
    }
    return undefined;
  }

  /** The shards this instance runs now. */
  get shardIds(): number[] {
    return [...this.connections.keys()];
  }

  onDispatch(listener: DispatchListener): () => void {
    this.dispatchListeners.add(listener);
    return () => this.dispatchListeners.delete(listener);
  }

  /** Told when a shard's connection is stopped by this instance. */
  onShardStopped(listener: ShardListener): () => void {
    this.stopListeners.add(listener);
    return () => this.stopListeners.delete(listener);
  }

  async startShard(shardId: number): Promise<void> {
    if (!this.info || this.connections.has(shardId)) return;
    // @discordjs/ws's defaults (identify properties, API version, encoding, timeouts).
    const options: FetchingStrategyOptions = {
      ...DefaultWebSocketManagerOptions,
      token: this.login.token,
      intents: DETECTOR_INTENTS,
      gatewayInformation: this.info,
      shardCount: this.shardTotal,
    };
    const connection = new ShardConnection(shardId, options, this.identify, this.sessions, {
      ...this.events,
      dispatch: (packet, id, context) => {
        for (const listener of this.dispatchListeners) listener(packet, id, context);
      },
    });
    this.connections.set(shardId, connection);
    try {
      await connection.connect();
    } catch (error) {
      // Not started (its session could not be read): nothing of it is left to stop.
      if (this.connections.get(shardId) === connection) this.connections.delete(shardId);
      throw error;
    }
  }

  /** Closes the shard's connection; `resumable` keeps its session for the next holder. */
  async stopShard(shardId: number, { resumable }: { resumable: boolean }): Promise<void> {
    const connection = this.connections.get(shardId);
    if (!connection) return;
    this.connections.delete(shardId);
    for (const listener of this.stopListeners) listener(shardId);
    await connection.close({ resumable });
  }

  async stopAll({ resumable }: { resumable: boolean }): Promise<void> {
    await Promise.all(this.shardIds.map((id) => this.stopShard(id, { resumable })));
  }

  /** Sends on the shard's connection; rejects when this instance does not run it. */
  send(shardId: number, payload: GatewaySendPayload): Promise<void> {
    const connection = this.connections.get(shardId);
    if (!connection) return Promise.reject(new Error(`Shard ${shardId} is not connected here`));
    return connection.send(payload);
  }
}
