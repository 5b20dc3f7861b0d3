import type { GuildMember, PartialGuildMember, PartialUser, User } from 'discord.js';
import type { NameType } from '../name-events/name-event.types.js';

/** A name a user no longer has, read from discord.js's copy of the object before the update. */
export interface DetectedChange {
  userId: string;
  type: NameType;
  /** The previous name: the one the history records. */
  name: string;
  /** The transition (old and new value, and the guild for a nickname), to spot a repeat. */
  key: string;
}

/**
 * `userUpdate`: discord.js emits it once per change (its user cache is shared by every guild
 * and shard) and also for avatar, banner and flag changes, so the name fields are compared.
 * `oldUser` is a copy taken before the patch; a partial one has no previous name.
 */
export function userNameChanges(
  botUserId: string | undefined,
  oldUser: User | PartialUser,
  newUser: User,
): DetectedChange[] {
  if (newUser.id === botUserId || oldUser.partial) return [];
  const changes: DetectedChange[] = [];
  const oldHandle = handle(oldUser);
  const newHandle = handle(newUser);
  if (oldHandle !== newHandle) {
    changes.push(change(newUser.id, 'username', oldHandle, ['username', oldHandle, newHandle]));
  }
  // null → "X" records nothing: there was no previous display name.
  if (oldUser.globalName && oldUser.globalName !== newUser.globalName) {
    changes.push(
      change(newUser.id, 'displayname', oldUser.globalName, [
        'globalName',
        oldUser.globalName,
        newUser.globalName,
      ]),
    );
  }
  return changes;
}

/**
 * `guildMemberUpdate`: emitted only for a cached member whose member fields changed. Its
 * `oldMember.user` is the same, already patched, object as `newMember.user`, so only
 * member fields (the nickname) are read from `oldMember`.
 */
export function memberNameChanges(
  botUserId: string | undefined,
  oldMember: GuildMember | PartialGuildMember,
  newMember: GuildMember,
): DetectedChange[] {
  if (newMember.id === botUserId || oldMember.partial) return [];
  const oldNickname = oldMember.nickname;
  // No nickname before (a first nickname) records nothing; a reset records the old one.
  if (!oldNickname || oldNickname === newMember.nickname) return [];
  return [
    change(newMember.id, 'displayname', oldNickname, [
      'nickname',
      newMember.guild.id,
      oldNickname,
      newMember.nickname,
    ]),
  ];
}

/**
 * The name a user is known by: the unique username, or "name#1234" for an account still on
 * the legacy system, so that the move to a unique username is recorded even when the
 * name itself stays the same.
 */
function handle(user: User | PartialUser): string {
  const username = user.username ?? '';
  return user.discriminator && user.discriminator !== '0'
    ? `${username}#${user.discriminator}`
    : username;
}

function change(
  userId: string,
  type: NameType,
  name: string,
  transition: (string | null)[],
): DetectedChange {
  return { userId, type, name, key: JSON.stringify([userId, ...transition]) };
}
