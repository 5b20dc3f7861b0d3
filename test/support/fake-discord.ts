/**
 * A fake Discord for real discord.js clients, over the network as Discord is reached: the
 * REST routes a bot calls at login (GET /gateway/bot; any other route is answered 404 and
 * recorded) and the gateway, a real WebSocket server speaking the public protocol (v10,
 * JSON, uncompressed): HELLO, heartbeats and their ACKs, IDENTIFY → READY and one
 * GUILD_CREATE per server of the shard, REQUEST_GUILD_MEMBERS → GUILD_MEMBERS_CHUNK (1,000
 * members each) or RATE_LIMITED, RESUME → the missed dispatches replayed, then RESUMED,
 * INVALID_SESSION, RECONNECT, and close codes. The service reaches it through
 * DISCORD_API_URL (`apiUrl`); GET /gateway/bot names the WebSocket server.
 *
 * The world (servers, members) lives here. A change made through `changeUser`/`changeMember`
 * is dispatched as Discord does it: to the session of each server's shard; while that session
 * is disconnected it waits in the session, replayed on RESUME; with no session at all (the
 * service stopped) it only changes the world, which the next GUILD_CREATE and member chunks
 * show. It enforces the gateway's limits and records every breach: 120 payloads per
 * connection per 60 s (closed with 4008), and a member request per server per
 * `memberRequestWindowMs` (answered with RATE_LIMITED; asking again before `retry_after`
 * has passed is a breach).
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  GatewayCloseCodes,
  GatewayDispatchEvents,
  GatewayOpcodes,
  type APIGuildMember,
  type APIUser,
  type GuildMemberFlags,
  type UserFlags,
} from 'discord.js';
import { WebSocket, WebSocketServer, type RawData } from 'ws';

/** Long enough for the configuration's check. */
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
const CHUNK_SIZE = 1_000;
/** Discord's gateway limit: payloads a connection may send per minute. */
export const GATEWAY_SEND_LIMIT = 120;
const SEND_WINDOW_MS = 60_000;

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
  /** Every member but the bot, which is a member of each server. */
  members: APIGuildMember[];
  /**
   * For a large server (more members than the IDENTIFY's `large_threshold`, 50 by default):
   * the ids of the members its GUILD_CREATE carries besides the bot. Default: none.
   */
  inGuildCreate?: string[];
}

export interface FakeDiscordOptions {
  guilds: FakeGuild[];
  /** The shard count GET /gateway/bot recommends. Default 1. */
  shardCount?: number;
  /** The session start limit's `max_concurrency`. Default 16: shards identify together. */
  maxConcurrency?: number;
  /** HELLO's `heartbeat_interval`, in ms. Default 2,000. */
  heartbeatIntervalMs?: number;
  /** How long a server's member list may not be asked for again. Default 0 (no limit). */
  memberRequestWindowMs?: number;
  /** What GET /gateway/bot gives as the gateway's address. Default: this fake's. */
  advertisedGatewayUrl?: string;
}

export interface RestRequest {
  method: string;
  path: string;
  authorization?: string;
  at: number;
}

export interface MemberRequest {
  guildId: string;
  shardId: number;
  nonce?: string;
  at: number;
  answer: 'members' | 'rate-limited';
  /** When the answer (its last chunk) was dispatched. */
  answeredAt?: number;
  /** Asked again before the `retry_after` it had been given had passed. */
  breach: boolean;
}

/** One WebSocket connection of a client. */
export class GatewayConnection {
  readonly openedAt = Date.now();
  /** Every payload the client sent, with when it arrived. */
  readonly received: { op: number; d: unknown; at: number }[] = [];
  /** IDENTIFY or RESUME, once sent. */
  opened?: 'identify' | 'resume';
  shardId?: number;
  session?: Session;
  hello = false;
  closeCode?: number;
  heartbeatAcks = 0;

  constructor(
    readonly ws: WebSocket,
    readonly url: string,
  ) {}

  get open(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  send(payload: unknown): void {
    if (this.open) this.ws.send(JSON.stringify(payload));
  }
}

/** A gateway session: its sequence and every dispatch it carried, for replay. */
export class Session {
  seq = 0;
  readonly sent: { op: 0; t: string; s: number; d: unknown }[] = [];
  connection?: GatewayConnection;
  /** A RESUME of it is answered with INVALID_SESSION (false). */
  invalid = false;
  resumes = 0;
  /** The IDENTIFY's `large_threshold` (Discord's default 50). */
  largeThreshold = 50;

  constructor(
    readonly id: string,
    readonly shardId: number,
  ) {}
}

export class FakeDiscord {
  readonly rest: RestRequest[] = [];
  readonly connections: GatewayConnection[] = [];
  readonly sessions: Session[] = [];
  readonly memberRequests: MemberRequest[] = [];
  /** Breaches of the gateway's limits, in words. */
  readonly breaches: string[] = [];
  /** Refuse the login: a bad token at GET /gateway/bot (401), or intents at IDENTIFY (4014). */
  refuse?: 'token' | 'intents';
  /** Heartbeats are acknowledged unless false. */
  ackHeartbeats = true;
  private readonly server: http.Server;
  private readonly wss: WebSocketServer;
  private readonly lastMemberAnswer = new Map<string, { at: number; retryUntil?: number }>();
  private held: GatewayConnection[] = [];
  private outage = false;
  private chunkGate?: { from: number; open: Promise<void> };
  private sessionCount = 0;

  private constructor(
    readonly world: FakeDiscordOptions,
    server: http.Server,
  ) {
    this.server = server;
    this.wss = new WebSocketServer({ server });
    this.wss.on('connection', (ws, request) => this.accept(ws, request.url ?? '/'));
    server.on('request', (request, response) => this.answerRest(request, response));
  }

  static async start(world: FakeDiscordOptions): Promise<FakeDiscord> {
    const server = http.createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return new FakeDiscord(world, server);
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** DISCORD_API_URL for the service. */
  get apiUrl(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  get gatewayUrl(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  get shardCount(): number {
    return this.world.shardCount ?? 1;
  }

  /** IDENTIFYs received, oldest first. */
  get identifies(): GatewayConnection[] {
    return this.connections.filter((c) => c.opened === 'identify');
  }

  /** The shard's newest session, if any. */
  session(shardId = 0): Session | undefined {
    return this.sessions.filter((s) => s.shardId === shardId).at(-1);
  }

  /** True while the shard's newest session has an open connection and is not resuming. */
  isLive(shardId = 0): boolean {
    const session = this.session(shardId);
    return !!session?.connection?.open && !session.invalid;
  }

  guild(id: string): FakeGuild {
    const guild = this.world.guilds.find((g) => g.id === id);
    if (!guild) throw new Error(`The fake Discord has no server ${id}`);
    return guild;
  }

  // ---- Changes in the world ----

  /**
   * Changes a user's names (or avatar): Discord tells each server the user is in with a
   * GUILD_MEMBER_UPDATE carrying the new user.
   */
  changeUser(userId: string, fields: Partial<APIUser>): void {
    for (const guild of this.world.guilds) {
      const index = guild.members.findIndex((m) => m.user.id === userId);
      if (index < 0) continue;
      const member = guild.members[index];
      guild.members[index] = { ...member, user: { ...member.user, ...fields } };
      this.memberUpdate(guild, guild.members[index]);
    }
  }

  /** Changes a member's nickname (or anything else of the member) in one server. */
  changeMember(guildId: string, userId: string, fields: Partial<APIGuildMember>): void {
    const guild = this.guild(guildId);
    const index = guild.members.findIndex((m) => m.user.id === userId);
    if (index < 0) throw new Error(`No member ${userId} in server ${guildId}`);
    guild.members[index] = { ...guild.members[index], ...fields };
    this.memberUpdate(guild, guild.members[index]);
  }

  /** GUILD_MEMBER_UPDATE of the bot's own member (its user cannot change from here). */
  changeBot(guildId: string, fields: Partial<APIGuildMember>): void {
    const guild = this.guild(guildId);
    this.memberUpdate(guild, apiMember(BOT_USER, fields));
  }

  /** A user joins a server: GUILD_MEMBER_ADD. */
  addMember(guildId: string, member: APIGuildMember): void {
    const guild = this.guild(guildId);
    guild.members.push(member);
    this.dispatchTo(guild.shardId ?? 0, GatewayDispatchEvents.GuildMemberAdd, {
      guild_id: guild.id,
      ...member,
    });
  }

  /**
   * A server goes through an outage: GUILD_DELETE (unavailable), then, once the returned
   * function is called, GUILD_CREATE again, as when it comes back.
   */
  guildOutage(guildId: string): () => void {
    const guild = this.guild(guildId);
    const shardId = guild.shardId ?? 0;
    this.dispatchTo(shardId, GatewayDispatchEvents.GuildDelete, {
      id: guild.id,
      unavailable: true,
    });
    return () => {
      const session = this.session(shardId);
      if (session && !session.invalid) this.guildCreate(session, guild, session.largeThreshold);
    };
  }

  /** The bot joins a server: GUILD_CREATE on its shard's session. */
  joinGuild(guild: FakeGuild): void {
    this.world.guilds.push(guild);
    const session = this.session(guild.shardId ?? 0);
    if (session && !session.invalid) this.guildCreate(session, guild, session.largeThreshold);
  }

  // ---- The connection ----

  /** Closes the shard's connection with `code` (default 4000: discord.js resumes). */
  disconnect(shardId = 0, code: number = GatewayCloseCodes.UnknownError): void {
    const connection = this.session(shardId)?.connection;
    if (connection?.open) connection.ws.close(code, 'closed by the fake Discord');
  }

  /** Op 7: the client should reconnect and resume. */
  requestReconnect(shardId = 0): void {
    this.session(shardId)?.connection?.send({ op: GatewayOpcodes.Reconnect, d: null });
  }

  /** Op 9 on the live connection: the session is over (`resumable` false) or may be resumed. */
  invalidateSession(shardId = 0, resumable = false): void {
    const session = this.session(shardId);
    if (!session) return;
    if (!resumable) session.invalid = true;
    session.connection?.send({ op: GatewayOpcodes.InvalidSession, d: resumable });
  }

  /**
   * An outage: every connection is cut, and new ones are accepted but get no HELLO until
   * `endOutage()`, as when Discord's gateway is unreachable or overloaded. Changes made
   * meanwhile wait in the sessions. With `sessionsLost`, the sessions do not survive it: the
   * RESUME that follows is answered with INVALID_SESSION, and nothing is replayed.
   */
  startOutage({ sessionsLost = false } = {}): void {
    this.outage = true;
    for (const session of this.sessions) {
      if (sessionsLost) session.invalid = true;
      const connection = session.connection;
      if (connection?.open) connection.ws.terminate();
    }
  }

  endOutage(): void {
    this.outage = false;
    for (const connection of this.held.splice(0)) this.hello(connection);
  }

  /** Member chunks from index `from` on wait until the returned function is called. */
  holdChunks(from: number): () => void {
    let release!: () => void;
    const open = new Promise<void>((resolve) => (release = resolve));
    this.chunkGate = { from, open };
    return () => {
      this.chunkGate = undefined;
      release();
    };
  }

  async close(): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // ---- REST ----

  private answerRest(request: http.IncomingMessage, response: http.ServerResponse): void {
    const path = new URL(request.url ?? '/', 'http://fake').pathname;
    this.rest.push({
      method: request.method ?? '',
      path,
      authorization: request.headers.authorization,
      at: Date.now(),
    });
    request.resume();
    const reply = (status: number, body: unknown) => {
      response.writeHead(status, { 'Content-Type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    if (request.method !== 'GET' || path !== '/api/v10/gateway/bot') {
      return reply(404, { message: '404: Not Found', code: 0 });
    }
    if (request.headers.authorization !== `Bot ${TEST_DISCORD_TOKEN}` || this.refuse === 'token') {
      return reply(401, { message: '401: Unauthorized', code: 0 });
    }
    reply(200, {
      url: this.world.advertisedGatewayUrl ?? this.gatewayUrl,
      shards: this.shardCount,
      session_start_limit: {
        total: 1000,
        remaining: 999,
        reset_after: 14_400_000,
        max_concurrency: this.world.maxConcurrency ?? 16,
      },
    });
  }

  // ---- The gateway ----

  private accept(ws: WebSocket, url: string): void {
    const connection = new GatewayConnection(ws, url);
    this.connections.push(connection);
    ws.on('message', (data: RawData) => this.receive(connection, data));
    ws.on('close', (code: number) => {
      connection.closeCode = code;
      if (connection.session?.connection === connection) connection.session.connection = undefined;
    });
    ws.on('error', () => undefined);
    if (this.outage) this.held.push(connection);
    else this.hello(connection);
  }

  private hello(connection: GatewayConnection): void {
    connection.hello = true;
    connection.send({
      op: GatewayOpcodes.Hello,
      d: { heartbeat_interval: this.world.heartbeatIntervalMs ?? 2_000 },
    });
  }

  private receive(connection: GatewayConnection, data: RawData): void {
    let payload: { op: GatewayOpcodes; d: unknown };
    try {
      // ws hands over a message as one Buffer, or its fragments when it came in several.
      const text = Array.isArray(data)
        ? Buffer.concat(data).toString()
        : Buffer.isBuffer(data)
          ? data.toString()
          : Buffer.from(data).toString();
      payload = JSON.parse(text) as { op: GatewayOpcodes; d: unknown };
    } catch {
      connection.ws.close(GatewayCloseCodes.DecodeError, 'Error while decoding payload.');
      return;
    }
    const at = Date.now();
    connection.received.push({ op: payload.op, d: payload.d, at });
    const lastMinute = connection.received.filter((r) => r.at > at - SEND_WINDOW_MS).length;
    if (lastMinute > GATEWAY_SEND_LIMIT) {
      this.breaches.push(`${lastMinute} payloads within 60 s on one connection`);
      connection.ws.close(GatewayCloseCodes.RateLimited, 'You are being rate limited.');
      return;
    }
    switch (payload.op) {
      case GatewayOpcodes.Heartbeat:
        if (this.ackHeartbeats) {
          connection.heartbeatAcks += 1;
          connection.send({ op: GatewayOpcodes.HeartbeatAck });
        }
        break;
      case GatewayOpcodes.Identify:
        this.identify(connection, payload.d as IdentifyData);
        break;
      case GatewayOpcodes.Resume:
        this.resume(connection, payload.d as { token: string; session_id: string; seq: number });
        break;
      case GatewayOpcodes.RequestGuildMembers:
        this.requestMembers(connection, payload.d as { guild_id: string; nonce?: string });
        break;
      default:
        break;
    }
  }

  private identify(connection: GatewayConnection, d: IdentifyData): void {
    if (connection.opened) {
      connection.ws.close(GatewayCloseCodes.AlreadyAuthenticated, 'Already authenticated.');
      return;
    }
    if (d.token !== TEST_DISCORD_TOKEN) {
      connection.ws.close(GatewayCloseCodes.AuthenticationFailed, 'Authentication failed.');
      return;
    }
    if (this.refuse === 'intents') {
      connection.ws.close(GatewayCloseCodes.DisallowedIntents, 'Disallowed intent(s).');
      return;
    }
    const [shardId, shardCount] = d.shard ?? [0, 1];
    if (shardCount !== this.shardCount || shardId >= shardCount) {
      connection.ws.close(GatewayCloseCodes.InvalidShard, 'Invalid shard.');
      return;
    }
    connection.opened = 'identify';
    connection.shardId = shardId;
    const session = new Session(`session-${++this.sessionCount}`, shardId);
    this.sessions.push(session);
    session.connection = connection;
    connection.session = session;
    const guilds = this.world.guilds.filter((g) => (g.shardId ?? 0) === shardId);
    this.dispatch(session, GatewayDispatchEvents.Ready, {
      v: 10,
      user: BOT_USER,
      guilds: guilds.map((g) => ({ id: g.id, unavailable: true })),
      session_id: session.id,
      resume_gateway_url: this.gatewayUrl,
      shard: [shardId, shardCount],
      application: { id: BOT_USER.id, flags: 0 },
    });
    session.largeThreshold = d.large_threshold ?? 50;
    for (const guild of guilds) this.guildCreate(session, guild, session.largeThreshold);
  }

  private guildCreate(session: Session, guild: FakeGuild, largeThreshold: number): void {
    const members = [apiMember(BOT_USER), ...guild.members];
    const large = members.length > largeThreshold;
    const sent = new Set(guild.inGuildCreate ?? []);
    this.dispatch(session, GatewayDispatchEvents.GuildCreate, {
      id: guild.id,
      name: `server ${guild.id}`,
      icon: null,
      owner_id: BOT_USER.id,
      joined_at: JOINED_AT,
      large,
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
      members: large
        ? members.filter((m) => m.user.id === BOT_USER.id || sent.has(m.user.id))
        : members,
    });
  }

  private resume(
    connection: GatewayConnection,
    d: { token: string; session_id: string; seq: number },
  ): void {
    const session = this.sessions.find((s) => s.id === d.session_id);
    if (d.token !== TEST_DISCORD_TOKEN) {
      connection.ws.close(GatewayCloseCodes.AuthenticationFailed, 'Authentication failed.');
      return;
    }
    connection.opened = 'resume';
    if (!session || session.invalid) {
      connection.send({ op: GatewayOpcodes.InvalidSession, d: false });
      return;
    }
    if (d.seq > session.seq) {
      connection.ws.close(GatewayCloseCodes.InvalidSeq, 'Invalid seq.');
      return;
    }
    connection.shardId = session.shardId;
    connection.session = session;
    session.connection = connection;
    session.resumes += 1;
    for (const missed of session.sent.filter((p) => p.s > d.seq)) connection.send(missed);
    this.dispatch(session, GatewayDispatchEvents.Resumed, null);
  }

  private requestMembers(
    connection: GatewayConnection,
    d: { guild_id: string; nonce?: string },
  ): void {
    const session = connection.session;
    if (!session) {
      connection.ws.close(GatewayCloseCodes.NotAuthenticated, 'Not authenticated.');
      return;
    }
    const at = Date.now();
    const guild = this.guild(d.guild_id);
    const last = this.lastMemberAnswer.get(guild.id);
    const breach = last?.retryUntil !== undefined && at < last.retryUntil;
    if (breach) this.breaches.push(`server ${guild.id} asked for again before retry_after`);
    const windowMs = this.world.memberRequestWindowMs ?? 0;
    const waitMs = last ? last.at + windowMs - at : 0;
    const request: MemberRequest = {
      guildId: guild.id,
      shardId: session.shardId,
      nonce: d.nonce,
      at,
      answer: waitMs > 0 ? 'rate-limited' : 'members',
      breach,
    };
    this.memberRequests.push(request);
    if (waitMs > 0) {
      last!.retryUntil = at + waitMs;
      this.dispatch(session, GatewayDispatchEvents.RateLimited, {
        opcode: GatewayOpcodes.RequestGuildMembers,
        retry_after: waitMs / 1000,
        meta: { guild_id: guild.id, nonce: d.nonce },
      });
      request.answeredAt = Date.now();
      return;
    }
    this.lastMemberAnswer.set(guild.id, { at });
    void this.sendChunks(session, guild, d.nonce).then(() => (request.answeredAt = Date.now()));
  }

  private async sendChunks(session: Session, guild: FakeGuild, nonce?: string): Promise<void> {
    const members = [apiMember(BOT_USER), ...guild.members];
    const count = Math.max(1, Math.ceil(members.length / CHUNK_SIZE));
    for (let index = 0; index < count; index++) {
      // As over a network: one chunk per turn of the event loop, not all in one burst.
      await new Promise((resolve) => setImmediate(resolve));
      const gate = this.chunkGate;
      if (gate && index >= gate.from) await gate.open;
      this.dispatch(session, GatewayDispatchEvents.GuildMembersChunk, {
        guild_id: guild.id,
        members: members.slice(index * CHUNK_SIZE, (index + 1) * CHUNK_SIZE),
        chunk_index: index,
        chunk_count: count,
        not_found: [],
        nonce,
      });
    }
  }

  private memberUpdate(guild: FakeGuild, member: APIGuildMember): void {
    this.dispatchTo(guild.shardId ?? 0, GatewayDispatchEvents.GuildMemberUpdate, {
      guild_id: guild.id,
      ...member,
    });
  }

  /** To the shard's newest session, if it has one that is still valid. */
  private dispatchTo(shardId: number, t: string, d: unknown): void {
    const session = this.session(shardId);
    if (session && !session.invalid) this.dispatch(session, t, d);
  }

  private dispatch(session: Session, t: string, d: unknown): void {
    session.seq += 1;
    const payload = { op: 0 as const, t, s: session.seq, d };
    session.sent.push(payload);
    const connection = session.connection;
    if (connection?.open && !this.outage) connection.send(payload);
  }
}

interface IdentifyData {
  token: string;
  intents: number;
  shard?: [number, number];
  large_threshold?: number;
}

/** `count` members with ids from `firstId` on, named `${prefix}${i}`, each with a nickname. */
export function manyMembers(count: number, firstId: bigint, prefix: string): APIGuildMember[] {
  return Array.from({ length: count }, (_, i) =>
    apiMember(apiUser(String(firstId + BigInt(i)), `${prefix}${i}`, { global_name: `G ${i}` }), {
      nick: `N ${i}`,
    }),
  );
}
