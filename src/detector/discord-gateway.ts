import { DefaultWebSocketManagerOptions, type FetchingStrategyOptions } from '@discordjs/ws';
import { GatewayIntentBits, type APIGatewayBotInfo, type GatewaySendPayload } from 'discord.js';
import type { DetectorSettings } from './detector.settings.js';
import { LocalIdentifyGate, type IdentifyGate } from './identify-gate.js';
import { SessionStore } from './session-store.js';
import { ShardConnection, type ShardEvents } from './shard-connection.js';

/** `Guilds` (the servers, with their members) and `GuildMembers` (privileged: member updates and requests). */
export const DETECTOR_INTENTS = GatewayIntentBits.Guilds | GatewayIntentBits.GuildMembers;

/** Discord's REST API when DISCORD_API_URL is unset. */
const DEFAULT_API_URL = 'https://discord.com/api';
const API_VERSION = '10';
const REQUEST_TIMEOUT_MS = 15_000;

/** Discord answered GET /gateway/bot with 401: the token is not a bot's (an operator must act). */
export class TokenRefusedError extends Error {
  constructor() {
    super('Discord refused the login: DISCORD_TOKEN is not a valid bot token');
    this.name = 'TokenRefusedError';
  }
}

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
 * the database, so memory does not grow with the members watched. `connectInfo` asks Discord
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

  /**
   * GET /gateway/bot: where the gateway is (DISCORD_GATEWAY_URL replaces it: a gateway proxy,
   * or a test double), the shard count Discord recommends, and the session start limit
   * (`max_concurrency`, and the identifies left today). Called once per login of the
   * instance: the only REST call the detector makes.
   */
  async connectInfo(): Promise<APIGatewayBotInfo> {
    const { token, apiUrl, gatewayUrl } = this.login;
    const response = await fetch(`${apiUrl ?? DEFAULT_API_URL}/v${API_VERSION}/gateway/bot`, {
      headers: { Authorization: `Bot ${token}` },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    }).catch((error: unknown) => {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new Error(cause?.code ?? cause?.message ?? (error as Error).message);
    });
    if (response.status === 401) throw new TokenRefusedError();
    if (!response.ok) throw new Error(`GET /gateway/bot answered ${response.status}`);
    const body = (await response.json()) as APIGatewayBotInfo;
    const info = gatewayUrl ? { ...body, url: gatewayUrl } : body;
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
    return [...this.connections.values()].find((connection) => connection.botUserId)?.botUserId;
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
    return connection.shard.send(payload);
  }
}
