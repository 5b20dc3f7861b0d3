import type { APIGuildMember, APIUser } from 'discord.js';

/**
 * What one gateway payload says about one member of one server, at the moment it arrived:
 * the user's names and the member's nickname. Live updates (GUILD_MEMBER_UPDATE and _ADD)
 * and full views (the members of GUILD_CREATE and GUILD_MEMBERS_CHUNK) are both read into
 * this one shape, and compared with the last known names the same way.
 */
export interface MemberObservation {
  guildId: string;
  userId: string;
  /** The unique username, or "name#1234" for an account still on the legacy system. */
  username: string;
  /** Null: no global display name. Undefined: the payload did not say. */
  globalName: string | null | undefined;
  /** Null: no nickname in this server. Undefined: the payload did not say. */
  nickname: string | null | undefined;
  /** When it arrived: the time of detection of any change it shows. */
  at: Date;
  /** Where a live update came from; unset for the members of a full view. */
  position?: GatewayPosition;
}

/** A dispatch's place in its shard's gateway session. */
export interface GatewayPosition {
  shardId: number;
  sessionId: string;
  sequence: number;
  /** Replayed by Discord after a RESUME: maybe stored already (ShardProgressRepository). */
  replayed: boolean;
}

type MemberPayload = Partial<Pick<APIGuildMember, 'nick'>> & {
  user?: Partial<Pick<APIUser, 'id' | 'username' | 'discriminator' | 'global_name'>>;
};

/** Reads a member object of a gateway payload; undefined for one without a usable user. */
export function observeMember(
  guildId: string,
  member: MemberPayload,
  at: Date,
): MemberObservation | undefined {
  const user = member.user;
  if (typeof user?.id !== 'string' || typeof user.username !== 'string') return undefined;
  return {
    guildId,
    userId: user.id,
    username: handle(user.username, user.discriminator),
    globalName: user.global_name,
    nickname: member.nick,
    at,
  };
}

/**
 * The name a user is known by: the unique username, or "name#1234" for an account still on
 * the legacy system, so that the move to a unique username is recorded even when the name
 * itself stays the same.
 */
function handle(username: string, discriminator: string | undefined): string {
  return discriminator && discriminator !== '0' ? `${username}#${discriminator}` : username;
}
