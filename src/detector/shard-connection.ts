import {
  DefaultWebSocketManagerOptions,
  WebSocketShard,
  WebSocketShardEvents,
  type FetchingStrategyOptions,
  type IContextFetchingStrategy,
  type SessionInfo,
} from '@discordjs/ws';
import type { GatewayDispatchPayload, GatewaySendPayload } from 'discord.js';
import type { IdentifyGate } from './identify-gate.js';

/** Where a shard's session (id, sequence, resume URL) is kept between connections. */
export interface SessionStore {
  load(shardId: number): Promise<SessionInfo | null>;
  save(shardId: number, session: SessionInfo | null): Promise<void>;
}

/** What a shard connection tells its owner. */
export interface ShardEvents {
  dispatch(packet: GatewayDispatchPayload, shardId: number): void;
  /** Closed by the gateway with `code`; `forGood` when @discordjs/ws does not reconnect. */
  closed(code: number, shardId: number, forGood: boolean): void;
  resumed(shardId: number): void;
  identified(shardId: number): void;
  warn(message: string): void;
}

/** Close codes after which @discordjs/ws gives the shard up (an operator must act). */
const CLOSED_FOR_GOOD = new Set([4004, 4010, 4011, 4012, 4013, 4014]);
/** Discord keeps a session closed with any code but 1000 and 1001 resumable. */
const RESUMABLE_CLOSE = 4200;

/**
 * One shard's gateway connection, @discordjs/ws's WebSocketShard without the manager: no
 * cache of any kind (the dispatches go to the owner as they come), the session kept where
 * `sessions` says (loaded before connecting, so a shard taken over from another instance
 * resumes its session), identifies paced by `identify` (across instances when it is Redis).
 * @discordjs/ws reconnects and resumes by itself after a drop, RECONNECT, a zombie
 * connection; a session Discord invalidates is identified anew.
 */
export class ShardConnection implements IContextFetchingStrategy {
  private readonly shard: WebSocketShard;
  /** The session as the shard last saw it: read on every heartbeat and dispatch. */
  private session: SessionInfo | null = null;
  /** Set while closing for a handover: the session outlives the connection. */
  private keepSession = false;

  constructor(
    readonly shardId: number,
    readonly options: FetchingStrategyOptions,
    private readonly identify: IdentifyGate,
    private readonly sessions: SessionStore,
    private readonly events: ShardEvents,
  ) {
    this.shard = new WebSocketShard(this, shardId);
    this.shard.on(WebSocketShardEvents.Dispatch, ({ data }) => events.dispatch(data, shardId));
    this.shard.on(WebSocketShardEvents.Ready, () => events.identified(shardId));
    this.shard.on(WebSocketShardEvents.Resumed, () => events.resumed(shardId));
    this.shard.on(WebSocketShardEvents.Closed, ({ code }) =>
      events.closed(code, shardId, CLOSED_FOR_GOOD.has(code)),
    );
    // Heard, or @discordjs/ws's emitter would throw it.
    this.shard.on(WebSocketShardEvents.Error, ({ error }) =>
      events.warn(`Discord shard ${shardId}: ${error.message}`),
    );
  }

  /** Connects: resumes the stored session when there is one, else identifies (in turn). */
  async connect(): Promise<void> {
    this.session = await this.sessions.load(this.shardId);
    // Resolves on READY or RESUMED; a refusal is reported through `closed`.
    void this.shard.connect().catch((error: Error) => this.events.warn(error.message));
  }

  /**
   * Closes the connection. `resumable`: with a code that keeps the session alive on
   * Discord's side, and the session kept in the store, for the next holder to resume.
   */
  async close({ resumable }: { resumable: boolean }): Promise<void> {
    this.keepSession = resumable;
    await this.shard.destroy(resumable ? { code: RESUMABLE_CLOSE } : { code: 1000 });
    if (resumable && this.session) await this.sessions.save(this.shardId, this.session);
  }

  send(payload: GatewaySendPayload): Promise<void> {
    return this.shard.send(payload);
  }

  retrieveSessionInfo(): SessionInfo | null {
    return this.session;
  }

  async updateSessionInfo(_shardId: number, session: SessionInfo | null): Promise<void> {
    // @discordjs/ws forgets the session on every close it does not reconnect from.
    if (!session && this.keepSession) return;
    this.session = session;
    await this.sessions.save(this.shardId, session);
  }

  waitForIdentify(shardId: number, signal: AbortSignal): Promise<void> {
    return this.identify.waitForIdentify(shardId, signal);
  }
}

/** The options of every shard of a login. */
export function shardOptions(
  token: string,
  intents: number,
  gatewayInformation: FetchingStrategyOptions['gatewayInformation'],
  shardCount: number,
): FetchingStrategyOptions {
  const {
    identifyProperties,
    version,
    encoding,
    handshakeTimeout,
    helloTimeout,
    readyTimeout,
    largeThreshold,
    initialPresence,
    compression,
  } = DefaultWebSocketManagerOptions;
  return {
    token,
    intents,
    gatewayInformation,
    shardCount,
    identifyProperties,
    version,
    encoding,
    handshakeTimeout,
    helloTimeout,
    readyTimeout,
    largeThreshold,
    initialPresence,
    compression,
  };
}
