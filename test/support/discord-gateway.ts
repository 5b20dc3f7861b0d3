/**
 * A Discord gateway without a network, for real discord.js clients.
 *
 * `FakeDiscordGateway` takes the place of the `@discordjs/ws` WebSocketManager inside a
 * discord.js `Client` (its private `ws._ws`), so `client.login()` runs discord.js's own code
 * end to end: READY on every shard, GUILD_CREATE with members, the shards and the manager
 * turning ready, `clientReady`. Every packet then goes through discord.js's own dispatch
 * listener and packet handlers, exactly as one from Discord would. The few internals this
 * touches (`ws._ws`, `ws.attachEvents()`, the events the WebSocketManager listens to) are
 * private discord.js API, checked against 14.28: they live here and nowhere else.
 */
import { EventEmitter } from 'node:events';
import {
  Events,
  GatewayCloseCodes,
  GatewayDispatchEvents,
  GatewayOpcodes,
  type APIGuildMember,
  type APIUser,
  type Client,
  type GuildMember,
  type GuildMemberFlags,
  type User,
  type UserFlags,
} from 'discord.js';
import { DiscordClientFactory } from '../../src/detector/discord-client.factory.js';
import { waitFor } from './ports.js';

/** Long enough for the configuration's check; never sent anywhere. */
export const TEST_DISCORD_TOKEN = 'test-token.for-the-fake-discord-gateway';

export const BOT_USER: APIUser = {
  id: '900000000000000001',
  username: 'prevnames-bot',
  discriminator: '0',
  global_name: null,
  avatar: null,
  bot: true,
  public_flags: 0 as UserFlags,
};

const JOINED_AT = '2024-01-01T00:00:00.000+00:00';

export function apiUser(id: string, username: string, fields: Partial<APIUser> = {}): APIUser {
  return {
    id,
    username,
    discriminator: '0',
    global_name: null,
    avatar: null,
    public_flags: 0 as UserFlags,
    ...fields,
  };
}

export function apiMember(user: APIUser, fields: Partial<APIGuildMember> = {}): APIGuildMember {
  return {
    user,
    nick: null,
    avatar: null,
    banner: null,
    roles: [],
    joined_at: JOINED_AT,
    premium_since: null,
    deaf: false,
    mute: false,
    flags: 0 as GuildMemberFlags,
    pending: false,
    ...fields,
  };
}

export interface FakeGuild {
  id: string;
  /** Default 0. */
  shardId?: number;
  /** Every member but the bot, which is added to each guild. */
  members: APIGuildMember[];
  /**
   * Ids of the members GUILD_CREATE carries (the bot always); the others reach the cache
   * only through a member request. Default: all of them.
   */
  inGuildCreate?: string[];
}

export interface FakeGatewayOptions {
  guilds: FakeGuild[];
  /** Default 1. */
  shardCount?: number;
  /**
   * The login fails: Discord refuses an invalid token (HTTP 401) or disallowed intents (close
   * code 4014), or Discord cannot be reached.
   */
  refuse?: 'token' | 'intents' | 'unreachable';
  /** The first N member requests are answered with RATE_LIMITED instead of members. */
  rateLimitedMemberRequests?: number;
  /** RATE_LIMITED's `retry_after`, in seconds. Default 0.05. */
  retryAfterSeconds?: number;
}

export interface MemberRequest {
  guildId: string;
  shardId: number;
  at: number;
  answer: 'members' | 'rate-limited';
  /** When the answer was dispatched. */
  answeredAt?: number;
}

/** The internals of discord.js's WebSocketManager this harness uses (private in its typings). */
interface ClientWebSocketManager {
  _ws: unknown;
  attachEvents(): void;
}

export class FakeDiscordGateway extends EventEmitter {
  readonly memberRequests: MemberRequest[] = [];
  /** Resolves on the client's `clientReady`. */
  readonly ready: Promise<void>;
  /** When the client was created (ms since the epoch). */
  readonly createdAt = Date.now();
  loginAttempts = 0;
  destroyed = false;
  /** When the client was destroyed. */
  destroyedAt?: number;
  private sequence = 0;
  private rateLimitsLeft: number;

  constructor(
    readonly client: Client,
    private readonly world: FakeGatewayOptions,
  ) {
    super();
    this.rateLimitsLeft = world.rateLimitedMemberRequests ?? 0;
    this.ready = new Promise((resolve) => client.once(Events.ClientReady, () => resolve()));
    const ws = client.ws as unknown as ClientWebSocketManager;
    ws._ws = this;
    ws.attachEvents();
  }

  // ---- What discord.js calls on @discordjs/ws's WebSocketManager ----

  get options(): { token: string | null } {
    return { token: this.client.token };
  }

  fetchGatewayInformation() {
    this.loginAttempts += 1;
    if (this.world.refuse === 'token') {
      return Promise.reject(Object.assign(new Error('401: Unauthorized'), { status: 401 }));
    }
    if (this.world.refuse === 'unreachable') {
      return Promise.reject(new Error('getaddrinfo ENOTFOUND discord.com'));
    }
    return Promise.resolve({
      url: 'wss://gateway.invalid',
      shards: this.shardCount,
      session_start_limit: { total: 1000, remaining: 999, reset_after: 0, max_concurrency: 1 },
    });
  }

  getShardCount(): Promise<number> {
    return Promise.resolve(this.shardCount);
  }

  getShardIds(): Promise<number[]> {
    return Promise.resolve(Array.from({ length: this.shardCount }, (_, id) => id));
  }

  /** Identifies every shard: READY, then each guild's GUILD_CREATE. */
  async connect(): Promise<void> {
    if (this.world.refuse === 'intents') {
      // As @discordjs/ws handles close code 4014: an error on the shard (which rejects the
      // connect), then the close.
      this.emit('error', { error: new Error('Used disallowed intents'), shardId: 0 });
      setImmediate(() =>
        this.emit('closed', { code: GatewayCloseCodes.DisallowedIntents, shardId: 0 }),
      );
      throw new Error('Used disallowed intents');
    }
    for (const shardId of await this.getShardIds()) {
      const ready = {
        v: 10,
        user: BOT_USER,
        guilds: this.guildsOf(shardId).map((guild) => ({ id: guild.id, unavailable: true })),
        session_id: `session-${shardId}`,
        resume_gateway_url: 'wss://gateway.invalid',
        shard: [shardId, this.shardCount],
        application: { id: BOT_USER.id, flags: 0 },
      };
      this.emit('ready', { data: ready, shardId });
      this.dispatch(GatewayDispatchEvents.Ready, ready, shardId);
    }
    for (const guild of this.world.guilds) this.guildCreate(guild);
  }

  destroy(): Promise<void> {
    this.destroyed = true;
    this.destroyedAt ??= Date.now();
    return Promise.resolve();
  }

  send(shardId: number, payload: { op: GatewayOpcodes; d: Record<string, unknown> }): void {
    if (payload.op !== GatewayOpcodes.RequestGuildMembers) return;
    const guildId = payload.d.guild_id as string;
    const nonce = payload.d.nonce as string;
    const rateLimited = this.rateLimitsLeft > 0;
    if (rateLimited) this.rateLimitsLeft -= 1;
    const request: MemberRequest = {
      guildId,
      shardId,
      at: Date.now(),
      answer: rateLimited ? 'rate-limited' : 'members',
    };
    this.memberRequests.push(request);
    // Answered on a later turn, as over a socket.
    setImmediate(() => {
      request.answeredAt = Date.now();
      if (rateLimited) {
        this.dispatch(
          GatewayDispatchEvents.RateLimited,
          {
            opcode: GatewayOpcodes.RequestGuildMembers,
            retry_after: this.world.retryAfterSeconds ?? 0.05,
            meta: { guild_id: guildId, nonce },
          },
          shardId,
        );
        return;
      }
      this.dispatch(
        GatewayDispatchEvents.GuildMembersChunk,
        {
          guild_id: guildId,
          members: this.membersOf(this.guild(guildId)),
          chunk_index: 0,
          chunk_count: 1,
          not_found: [],
          nonce,
        },
        shardId,
      );
    });
  }

  // ---- For tests ----

  /** One dispatch packet (op 0), through discord.js's dispatch listener and packet handler. */
  dispatch(t: string, d: unknown, shardId = 0): void {
    this.sequence += 1;
    this.emit('dispatch', { data: { op: 0, t, d, s: this.sequence }, shardId });
  }

  /** GUILD_MEMBER_UPDATE in `guildId`, on that guild's shard: what Discord sends for a change. */
  memberUpdate(guildId: string, member: APIGuildMember): void {
    const guild = this.guild(guildId);
    this.dispatch(
      GatewayDispatchEvents.GuildMemberUpdate,
      { guild_id: guildId, ...member },
      guild.shardId ?? 0,
    );
  }

  /** The gateway closes a shard's connection with `code`, as @discordjs/ws reports it. */
  close(code: number, shardId = 0): void {
    this.emit('closed', { code, shardId });
  }

  /** USER_UPDATE: sent only for the bot's own user. */
  userUpdate(user: APIUser, shardId = 0): void {
    this.dispatch(GatewayDispatchEvents.UserUpdate, user, shardId);
  }

  /** GUILD_CREATE of a guild joined after READY (`guildCreate` once the client is ready). */
  guildCreate(guild: FakeGuild): void {
    if (!this.world.guilds.includes(guild)) this.world.guilds.push(guild);
    const members = this.membersOf(guild);
    const sent = guild.inGuildCreate;
    this.dispatch(
      GatewayDispatchEvents.GuildCreate,
      {
        id: guild.id,
        name: `guild ${guild.id}`,
        icon: null,
        owner_id: BOT_USER.id,
        joined_at: JOINED_AT,
        large: false,
        unavailable: false,
        member_count: members.length,
        roles: [],
        channels: [],
        threads: [],
        emojis: [],
        stickers: [],
        presences: [],
        voice_states: [],
        stage_instances: [],
        guild_scheduled_events: [],
        soundboard_sounds: [],
        members: sent
          ? members.filter((m) => m.user.id === BOT_USER.id || sent.includes(m.user.id))
          : members,
      },
      guild.shardId ?? 0,
    );
  }

  private get shardCount(): number {
    return this.world.shardCount ?? 1;
  }

  private guildsOf(shardId: number): FakeGuild[] {
    return this.world.guilds.filter((guild) => (guild.shardId ?? 0) === shardId);
  }

  private guild(id: string): FakeGuild {
    const guild = this.world.guilds.find((g) => g.id === id);
    if (!guild) throw new Error(`The fake gateway has no guild ${id}`);
    return guild;
  }

  private membersOf(guild: FakeGuild): APIGuildMember[] {
    return [apiMember(BOT_USER), ...guild.members];
  }
}

/**
 * A user object discord.js builds from `data` without caching it (its `_add` is private API);
 * partial when `data` has no username. Use an id the client has not cached: for a cached one
 * discord.js returns a patched copy of the cached user.
 */
export function uncachedUser(client: Client, data: Partial<APIUser> & { id: string }): User {
  const users = client.users as unknown as { _add(data: unknown, cache: boolean): User };
  return users._add(data, false);
}

/** The same for a member of `guildId`; partial when `data` has no `joined_at`. */
export function uncachedMember(
  client: Client,
  guildId: string,
  data: Partial<APIGuildMember> & { user: APIUser },
): GuildMember {
  const members = client.guilds.cache.get(guildId)!.members as unknown as {
    _add(data: unknown, cache: boolean): GuildMember;
  };
  return members._add(data, false);
}

/**
 * The detector's own client factory (same intents, partials and sharding), with each client
 * wired to a FakeDiscordGateway built from `world()`.
 */
export class FakeDiscordClientFactory extends DiscordClientFactory {
  readonly gateways: FakeDiscordGateway[] = [];

  constructor(private readonly world: () => FakeGatewayOptions) {
    super();
  }

  override create(): Client {
    const client = super.create();
    const gateway = new FakeDiscordGateway(client, this.world());
    this.gateways.push(gateway);
    return client;
  }

  /** The `index`th client's gateway (0: the first), waiting up to `timeoutMs` for it. */
  gateway(index: number, timeoutMs = 5_000): Promise<FakeDiscordGateway> {
    return waitFor(`Discord client #${index + 1} to be created`, () => this.gateways[index], {
      timeoutMs,
      intervalMs: 10,
    });
  }
}
