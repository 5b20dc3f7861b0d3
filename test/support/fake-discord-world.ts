import type { APIGuildMember, APIUser, GuildMemberFlags, UserFlags } from 'discord.js';

/**
 * The fake Discord's world: its users, members and servers, and the payloads that show a
 * server to a session (GUILD_CREATE, GUILD_MEMBERS_CHUNK).
 */

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

/** `count` members with ids from `firstId` on, named `${prefix}${i}`, each with a nickname. */
export function manyMembers(count: number, firstId: bigint, prefix: string): APIGuildMember[] {
  return Array.from({ length: count }, (_, i) =>
    apiMember(apiUser(String(firstId + BigInt(i)), `${prefix}${i}`, { global_name: `G ${i}` }), {
      nick: `N ${i}`,
    }),
  );
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
  /**
   * The shard count GET /gateway/bot recommends when it is not the one the gateway takes
   * (`shardCount`: a bot that sets its own count). Default: `shardCount`.
   */
  recommendedShardCount?: number;
  /** The session starts left today, and when they reset. Default 999, in 4 h. */
  sessionStarts?: { remaining: number; resetAfterMs: number };
  /** HELLO's `heartbeat_interval`, in ms. Default 2,000. */
  heartbeatIntervalMs?: number;
  /** How long a server's member list may not be asked for again. Default 0 (no limit). */
  memberRequestWindowMs?: number;
  /** What GET /gateway/bot gives as the gateway's address. Default: this fake's. */
  advertisedGatewayUrl?: string;
  /**
   * The first IDENTIFY the gateway receives is taken this many ms late, as if it had been that
   * long on its way (a slow network, a stalled sender). Default 0.
   */
  firstIdentifyLatencyMs?: number;
}

/** GUILD_CREATE's data for `guild`, as a session with `largeThreshold` is sent it. */
export function guildCreateData(guild: FakeGuild, largeThreshold: number) {
  const members = [apiMember(BOT_USER), ...guild.members];
  const large = members.length > largeThreshold;
  const sent = new Set(guild.inGuildCreate ?? []);
  return {
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
  };
}

/** Every member of `guild` (the bot first) as GUILD_MEMBERS_CHUNK data, 1,000 a chunk. */
export function memberChunks(guild: FakeGuild, nonce?: string) {
  const members = [apiMember(BOT_USER), ...guild.members];
  const count = Math.max(1, Math.ceil(members.length / CHUNK_SIZE));
  return Array.from({ length: count }, (_, index) => ({
    guild_id: guild.id,
    members: members.slice(index * CHUNK_SIZE, (index + 1) * CHUNK_SIZE),
    chunk_index: index,
    chunk_count: count,
    not_found: [],
    nonce,
  }));
}
