import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { GatewayCloseCodes, GatewayDispatchEvents, GatewayOpcodes } from 'discord.js';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import {
  BOT_USER,
  guildCreateData,
  TEST_DISCORD_TOKEN,
  type FakeDiscordOptions,
  type FakeGuild,
} from './fake-discord-world.js';
import {
  decode,
  GATEWAY_SEND_LIMIT,
  GatewayConnection,
  Session,
  type IdentifyData,
  type ResumeData,
} from './fake-gateway-session.js';
import { connectedTwice, identifiedTooSoon } from './fake-gateway-limits.js';

/**
 * The fake Discord's gateway: a real WebSocket server speaking the public protocol (v10,
 * JSON, uncompressed): HELLO, heartbeats and their ACKs, IDENTIFY → READY and one
 * GUILD_CREATE per server of the shard, RESUME → the missed dispatches replayed, then
 * RESUMED, INVALID_SESSION, RECONNECT, close codes, and outages. It records every connection
 * and session, and every breach of the limit of 120 payloads per connection per 60 s (closed
 * with 4008). Member requests are left to the subclass.
 */
export abstract class FakeGateway {
  readonly connections: GatewayConnection[] = [];
  readonly sessions: Session[] = [];
  /** Breaches of the gateway's limits, in words. */
  readonly breaches: string[] = [];
  /** Refuse the login: a bad token at GET /gateway/bot (401), or intents at IDENTIFY (4014). */
  refuse?: 'token' | 'intents';
  /** Heartbeats are acknowledged unless false. */
  ackHeartbeats = true;
  private readonly wss: WebSocketServer;
  private held: GatewayConnection[] = [];
  private outage = false;
  private sessionCount = 0;
  private identifyReceived = false;

  protected constructor(
    readonly world: FakeDiscordOptions,
    protected readonly server: http.Server,
  ) {
    this.wss = new WebSocketServer({ server });
    this.wss.on('connection', (ws, request) => this.accept(ws, request.url ?? '/'));
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  get gatewayUrl(): string {
    return `ws://127.0.0.1:${this.port}`;
  }

  get shardCount(): number {
    return this.world.shardCount ?? 1;
  }

  /** The session start limit's `max_concurrency`. Default 16: shards identify together. */
  get maxConcurrency(): number {
    return this.world.maxConcurrency ?? 16;
  }

  /** The connections that carried shard `shardId` (IDENTIFY or RESUME), oldest first. */
  connectionsOf(shardId: number): GatewayConnection[] {
    return this.connections.filter((c) => c.shardId === shardId && c.authenticatedAt);
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

  protected async closeGateway(): Promise<void> {
    for (const ws of this.wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  /** REQUEST_GUILD_MEMBERS on `session`. */
  protected abstract requestMembers(session: Session, guildId: string, nonce?: string): void;

  /** GUILD_CREATE of `guild` on `session`. */
  protected guildCreate(session: Session, guild: FakeGuild): void {
    this.dispatch(
      session,
      GatewayDispatchEvents.GuildCreate,
      guildCreateData(guild, session.largeThreshold),
    );
  }

  /** To the shard's newest session, if it has one that is still valid. */
  protected dispatchTo(shardId: number, t: string, d: unknown): void {
    const session = this.session(shardId);
    if (session && !session.invalid) this.dispatch(session, t, d);
  }

  protected dispatch(session: Session, t: string, d: unknown): void {
    session.seq += 1;
    const payload = { op: 0 as const, t, s: session.seq, d };
    session.sent.push(payload);
    const connection = session.connection;
    if (connection?.open && !this.outage) connection.send(payload);
  }

  private breach(breach: string | undefined): void {
    if (breach) this.breaches.push(breach);
  }

  private accept(ws: WebSocket, url: string): void {
    const connection = new GatewayConnection(ws, url);
    this.connections.push(connection);
    ws.on('message', (data: RawData) => this.receive(connection, data));
    ws.on('close', (code: number) => {
      connection.closeCode = code;
      connection.closedAt = Date.now();
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
    const payload = decode(data);
    if (!payload) {
      connection.ws.close(GatewayCloseCodes.DecodeError, 'Error while decoding payload.');
      return;
    }
    const lastMinute = connection.record(payload);
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
      case GatewayOpcodes.Identify: {
        const latencyMs = this.identifyReceived ? 0 : (this.world.firstIdentifyLatencyMs ?? 0);
        this.identifyReceived = true;
        if (latencyMs > 0) {
          setTimeout(() => this.identify(connection, payload.d as IdentifyData), latencyMs);
        } else {
          this.identify(connection, payload.d as IdentifyData);
        }
        break;
      }
      case GatewayOpcodes.Resume:
        this.resume(connection, payload.d as ResumeData);
        break;
      case GatewayOpcodes.RequestGuildMembers: {
        const { guild_id, nonce } = payload.d as { guild_id: string; nonce?: string };
        if (connection.session) this.requestMembers(connection.session, guild_id, nonce);
        else connection.ws.close(GatewayCloseCodes.NotAuthenticated, 'Not authenticated.');
        break;
      }
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
    this.breach(identifiedTooSoon(this.identifies, connection, shardId, this.maxConcurrency));
    this.breach(connectedTwice(this.connections, connection, shardId));
    connection.opened = 'identify';
    connection.authenticatedAt = Date.now();
    // Unique across gateways, as Discord's are: a database outlives a test's fake Discord.
    const session = new Session(`session-${++this.sessionCount}-${randomUUID()}`, shardId);
    this.sessions.push(session);
    session.attach(connection);
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
    for (const guild of guilds) this.guildCreate(session, guild);
  }

  private resume(connection: GatewayConnection, d: ResumeData): void {
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
    this.breach(connectedTwice(this.connections, connection, session.shardId));
    connection.authenticatedAt = Date.now();
    session.attach(connection);
    session.resumes += 1;
    for (const missed of session.sent.filter((p) => p.s > d.seq)) connection.send(missed);
    this.dispatch(session, GatewayDispatchEvents.Resumed, null);
  }
}
