/**
 * A fake Discord for real discord.js clients, over the network as Discord is reached: the
 * REST routes a bot calls at login (fake-discord-rest.ts), the gateway (fake-gateway.ts) and
 * the members' chunks it answers member requests with (fake-member-requests.ts). The service
 * reaches it through DISCORD_API_URL (`apiUrl`); GET /gateway/bot names the WebSocket server.
 *
 * The world (servers, members: fake-discord-world.ts) lives here. A change made through
 * `changeUser`/`changeMember` is dispatched as Discord does it: to the session of each
 * server's shard; while that session is disconnected it waits in the session, replayed on
 * RESUME; with no session at all (the service stopped) it only changes the world, which the
 * next GUILD_CREATE and member chunks show. Every request, connection, session and breach of
 * the gateway's limits is recorded for the tests to read.
 */
import { once } from 'node:events';
import http from 'node:http';
import {
  GatewayCloseCodes,
  GatewayDispatchEvents,
  GatewayOpcodes,
  type APIGuildMember,
  type APIUser,
} from 'discord.js';
import { answerRest, type RestRequest, type RestState } from './fake-discord-rest.js';
import {
  apiMember,
  BOT_USER,
  type FakeDiscordOptions,
  type FakeGuild,
} from './fake-discord-world.js';
import { FakeGateway } from './fake-gateway.js';
import type { Session } from './fake-gateway-session.js';
import { MemberRequests, type MemberRequest } from './fake-member-requests.js';

export * from './fake-discord-world.js';
export { GATEWAY_SEND_LIMIT, GatewayConnection, Session } from './fake-gateway-session.js';
export type { MemberRequest } from './fake-member-requests.js';
export type { RestRequest } from './fake-discord-rest.js';

export class FakeDiscord extends FakeGateway implements RestState {
  readonly rest: RestRequest[] = [];
  /** When the day's session starts reset (epoch ms). */
  readonly sessionStartsResetAt: number;
  private readonly members: MemberRequests;

  /** Not listening yet: `listen()` (or `FakeDiscord.start`). */
  constructor(world: FakeDiscordOptions) {
    super(world, http.createServer());
    this.members = new MemberRequests(world.memberRequestWindowMs ?? 0, this.breaches);
    this.sessionStartsResetAt = Date.now() + (world.sessionStarts?.resetAfterMs ?? 14_400_000);
    this.server.on('request', (request, response) => answerRest(this, request, response));
  }

  static async start(world: FakeDiscordOptions): Promise<FakeDiscord> {
    const discord = new FakeDiscord(world);
    await discord.listen();
    return discord;
  }

  async listen(): Promise<void> {
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
  }

  async close(): Promise<void> {
    await this.closeGateway();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** DISCORD_API_URL for the service. */
  get apiUrl(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  get advertisedGatewayUrl(): string {
    return this.world.advertisedGatewayUrl ?? this.gatewayUrl;
  }

  get recommendedShardCount(): number {
    return this.world.recommendedShardCount ?? this.shardCount;
  }

  /**
   * The session starts left, as Discord counts them: the world's, less every IDENTIFY since,
   * until `sessionStartsResetAt`; then a new day's thousand.
   */
  get sessionStarts(): { remaining: number; resetAfterMs: number } {
    const untilReset = this.sessionStartsResetAt - Date.now();
    if (untilReset <= 0) return { remaining: 1000, resetAfterMs: 86_400_000 };
    const remaining = this.world.sessionStarts?.remaining ?? 999;
    return { remaining: Math.max(0, remaining - this.identifies.length), resetAfterMs: untilReset };
  }

  /** Every REQUEST_GUILD_MEMBERS, with its answer. */
  get memberRequests(): MemberRequest[] {
    return this.members.requests;
  }

  guild(id: string): FakeGuild {
    const guild = this.world.guilds.find((g) => g.id === id);
    if (!guild) throw new Error(`The fake Discord has no server ${id}`);
    return guild;
  }

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
    this.memberUpdate(this.guild(guildId), apiMember(BOT_USER, fields));
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
    return () => this.guildCreateOnShard(guild);
  }

  /** The bot joins a server: GUILD_CREATE on its shard's session. */
  joinGuild(guild: FakeGuild): void {
    this.world.guilds.push(guild);
    this.guildCreateOnShard(guild);
  }

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
   * Every session ends, as when a bot stayed away too long: a RESUME is answered with
   * INVALID_SESSION, and what changed meanwhile only the next full views show.
   */
  expireSessions(): void {
    for (const session of this.sessions) session.invalid = true;
  }

  /** Member chunks from index `from` on wait until the returned function is called. */
  holdChunks(from: number): () => void {
    return this.members.hold(from);
  }

  protected requestMembers(session: Session, guildId: string, nonce?: string): void {
    this.members.answer(this.guild(guildId), session.shardId, nonce, (t, d) =>
      this.dispatch(session, t, d),
    );
  }

  private guildCreateOnShard(guild: FakeGuild): void {
    const session = this.session(guild.shardId ?? 0);
    if (session && !session.invalid) this.guildCreate(session, guild);
  }

  private memberUpdate(guild: FakeGuild, member: APIGuildMember): void {
    this.dispatchTo(guild.shardId ?? 0, GatewayDispatchEvents.GuildMemberUpdate, {
      guild_id: guild.id,
      ...member,
    });
  }
}
