import {
  WebSocketShard,
  WebSocketShardEvents,
  type FetchingStrategyOptions,
  type IContextFetchingStrategy,
  type SessionInfo,
} from '@discordjs/ws';
import { GatewayDispatchEvents, type GatewayDispatchPayload } from 'discord.js';
import type { IdentifyGate } from './identify-gate.js';
import type { SessionStore } from './session-store.js';
import { StoredSequence } from './stored-sequence.js';

/** A shard's session as kept between connections, with the bot's user id (a RESUME has no READY). */
export type StoredSession = SessionInfo & { botUserId?: string };

/**
 * Called by a dispatch's handler that finishes it later (its members compared and stored):
 * the returned function says it is done. A dispatch nobody holds is done once heard.
 */
export type Hold = () => () => void;

/** How a dispatch came: live, or replayed by Discord after a RESUME (old news, maybe seen already). */
export interface DispatchContext {
  hold: Hold;
  replayed: boolean;
  /** The session it came in (unset only before READY). */
  sessionId: string | undefined;
}

/** What a shard connection tells its owner. */
export interface ShardEvents {
  dispatch(packet: GatewayDispatchPayload, shardId: number, context: DispatchContext): void;
  /** Closed by the gateway with `code`; `forGood` when @discordjs/ws does not reconnect. */
  closed(code: number, shardId: number, forGood: boolean): void;
  /** A session started: a new one (identify) or a resumed one (resume). */
  started(kind: 'identify' | 'resume'): void;
  warn(message: string): void;
}

/** Close codes after which @discordjs/ws gives the shard up (an operator must act). */
const CLOSED_FOR_GOOD = new Set([4004, 4010, 4011, 4012, 4013, 4014]);
/** Discord keeps a session closed with any code but 1000 and 1001 resumable. */
const RESUMABLE_CLOSE = 4200;
/** How soon a session whose sequence moved is saved (a lag is replayed by the next holder). */
const SAVE_EVERY_MS = 250;

/**
 * One shard's gateway connection, @discordjs/ws's WebSocketShard without the manager: no
 * cache of any kind (the dispatches go to the owner as they come), the session kept where
 * `sessions` says (loaded before connecting, so a shard taken over from another instance
 * resumes its session; saved at READY, every 250 ms while it moves, and at a handover,
 * with the sequence up to which changes are stored: StoredSequence), identifies paced by
 * `identify` (across instances when it is Redis).
 * @discordjs/ws reconnects and resumes by itself after a drop, RECONNECT, a zombie
 * connection; a session Discord invalidates is identified anew.
 */
export class ShardConnection implements IContextFetchingStrategy {
  /** @discordjs/ws's connection: sent on as it is. */
  readonly shard: WebSocketShard;
  /** The session as the shard last saw it: read on every heartbeat and dispatch. */
  private session: SessionInfo | null = null;
  /** Set while closing for a handover: the session outlives the connection. */
  private keepSession = false;
  /** Closed: a connect still loading its session stops there (its lease may be gone). */
  private closed = false;
  private readonly sequence = new StoredSequence();
  private saveTimer?: NodeJS.Timeout;
  private saving: Promise<void> = Promise.resolve();
  /** From READY, or the stored session. */
  botUserId?: string;
  /** Resuming on this connection: what Discord sends below `replayedBelow` is a replay. */
  private resuming = false;
  private replayedBelow?: number;
  private lastSequence = 0;

  constructor(
    readonly shardId: number,
    readonly options: FetchingStrategyOptions,
    private readonly identify: IdentifyGate,
    private readonly sessions: SessionStore,
    private readonly events: ShardEvents,
  ) {
    this.shard = new WebSocketShard(this, shardId);
    this.shard.on(WebSocketShardEvents.Dispatch, ({ data }) => this.dispatch(data));
    // @discordjs/ws resumes after HELLO when it has a session of this shard count. Its
    // status cannot tell a replay: messages are handled concurrently, so RESUMED may be
    // handled before the dispatches replayed ahead of it. Their sequence can.
    this.shard.on(WebSocketShardEvents.Hello, () => {
      this.resuming = this.session?.shardCount === options.shardCount;
      this.replayedBelow = undefined;
    });
    this.shard.on(WebSocketShardEvents.Ready, ({ data }) => {
      this.botUserId = data.user.id;
      this.saveNow();
      // Without it the turn's own window still holds, from before the IDENTIFY left.
      identify
        .identified(shardId)
        .catch((error: Error) =>
          events.warn(`Could not hold shard ${shardId}'s identify window: ${error.message}`),
        );
      events.started('identify');
    });
    this.shard.on(WebSocketShardEvents.Resumed, () => events.started('resume'));
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
    const stored = await this.sessions.load(this.shardId);
    // Closed while the session loaded: @discordjs/ws had nothing to close yet.
    if (this.closed) return;
    this.session = stored;
    this.botUserId = stored?.botUserId;
    if (stored) this.sequence.reset(stored.sequence);
    // Resolves on READY or RESUMED; a refusal is reported through `closed`.
    void this.shard.connect().catch((error: Error) => this.events.warn(error.message));
  }

  /**
   * Closes the connection. `resumable`: with a code that keeps the session alive on
   * Discord's side, and the session kept in the store, for the next holder to resume.
   */
  async close({ resumable }: { resumable: boolean }): Promise<void> {
    this.closed = true;
    this.keepSession = resumable;
    await this.shard.destroy(resumable ? { code: RESUMABLE_CLOSE } : { code: 1000 });
    clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    await this.saving;
    if (resumable && this.session) await this.sessions.save(this.shardId, this.toStore());
  }

  retrieveSessionInfo(): SessionInfo | null {
    return this.session;
  }

  /** Called with every sequence, before its dispatch is handled: kept here, saved later. */
  async updateSessionInfo(_shardId: number, session: SessionInfo | null): Promise<void> {
    // @discordjs/ws forgets the session on every close it does not reconnect from.
    if (!session && this.keepSession) return;
    if (session && session.sessionId !== this.session?.sessionId)
      this.sequence.reset(session.sequence);
    this.session = session;
    if (!session) {
      clearTimeout(this.saveTimer);
      this.saveTimer = undefined;
      await this.sessions.save(this.shardId, null);
      return;
    }
    this.saveTimer ??= setTimeout(() => this.saveNow(), SAVE_EVERY_MS);
  }

  private dispatch(packet: GatewayDispatchPayload): void {
    const s = packet.s;
    this.sequence.begin(s);
    let holds = 0;
    let heard = false;
    const hold = () => {
      holds += 1;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        holds -= 1;
        if (holds === 0 && heard) this.sequence.end(s);
      };
    };
    if (s > this.lastSequence) this.lastSequence = s;
    if (packet.t === GatewayDispatchEvents.Resumed) {
      this.replayedBelow = typeof s === 'number' ? s : this.lastSequence + 1;
    }
    const replayed = this.resuming && (this.replayedBelow === undefined || s < this.replayedBelow);
    const sessionId = this.session?.sessionId;
    this.events.dispatch(packet, this.shardId, { hold, replayed, sessionId });
    heard = true;
    if (holds === 0) this.sequence.end(s);
  }

  private toStore(): StoredSession {
    return { ...this.session!, sequence: this.sequence.stored, botUserId: this.botUserId };
  }

  private saveNow(): void {
    clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    if (!this.session) return;
    const session = this.toStore();
    this.saving = this.saving
      .then(() => this.sessions.save(this.shardId, session))
      .catch((error: Error) =>
        this.events.warn(`Could not save shard ${this.shardId}'s session: ${error.message}`),
      );
    // Saved again while dispatches are still being handled.
    if (session.sequence < this.session.sequence) {
      this.saveTimer = setTimeout(() => this.saveNow(), SAVE_EVERY_MS);
    }
  }

  waitForIdentify(shardId: number, signal: AbortSignal): Promise<void> {
    return this.identify.waitForIdentify(shardId, signal);
  }
}
