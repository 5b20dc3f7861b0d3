import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  Events,
  type Client,
  type GuildMember,
  type PartialGuildMember,
  type PartialUser,
  type User,
} from 'discord.js';
import { Clock } from './clock.js';
import { DetectorOutbox } from './detector-outbox.js';
import { DETECTOR_SETTINGS, type DetectorSettings } from './detector.settings.js';
import { memberNameChanges, userNameChanges, type DetectedChange } from './name-change-rules.js';

/** What the history can store (the contract's `name`): 1-256 code points, no NUL, well-formed. */
const MAX_NAME_LENGTH = 256;

/**
 * Turns a client's `userUpdate` and `guildMemberUpdate` events into name changes for the
 * outbox, stamped with the time of detection. A change seen again within the duplicate
 * window (the same transition through another shard's or guild's packet) is emitted once.
 */
@Injectable()
export class NameChangeDetector {
  private readonly logger = new Logger('DiscordDetector');
  /** Transition key → when it may be emitted again (ms since the epoch). */
  private readonly recent = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly outbox: DetectorOutbox,
    @Inject(DETECTOR_SETTINGS) private readonly settings: DetectorSettings,
  ) {}

  /** Starts watching `client`; returns the function that stops. */
  watch(client: Client): () => void {
    const onUserUpdate = (oldUser: User | PartialUser, newUser: User) =>
      this.guarded(() => userNameChanges(client.user?.id, oldUser, newUser));
    const onMemberUpdate = (oldMember: GuildMember | PartialGuildMember, newMember: GuildMember) =>
      this.guarded(() => memberNameChanges(client.user?.id, oldMember, newMember));
    client.on(Events.UserUpdate, onUserUpdate);
    client.on(Events.GuildMemberUpdate, onMemberUpdate);
    return () => {
      client.off(Events.UserUpdate, onUserUpdate);
      client.off(Events.GuildMemberUpdate, onMemberUpdate);
    };
  }

  /** Runs inside discord.js's packet handler: nothing may escape into the gateway client. */
  private guarded(detect: () => DetectedChange[]): void {
    try {
      for (const change of detect()) this.emit(change);
    } catch (error) {
      this.logger.error(`Name change detection failed: ${(error as Error).stack ?? String(error)}`);
    }
  }

  private emit({ key, ...change }: DetectedChange): void {
    const now = this.clock.now();
    const at = now.getTime();
    if ((this.recent.get(key) ?? 0) > at) return;
    this.forgetExpired(at);
    this.recent.set(key, at + this.settings.duplicateWindowMs);
    if (!isRecordable(change.name)) {
      this.logger.warn(
        `Ignored a ${change.type} change of user ${change.userId}: the old name cannot be stored`,
      );
      return;
    }
    this.outbox.enqueue({ ...change, changedAt: now });
  }

  /** Keys are kept in the order they expire (one window for all), so this stops early. */
  private forgetExpired(at: number): void {
    for (const [key, until] of this.recent) {
      if (until > at) return;
      this.recent.delete(key);
    }
  }
}

function isRecordable(name: string): boolean {
  if (name.length === 0 || !name.isWellFormed() || name.includes('\u0000')) return false;
  let count = 0;
  for (const _ of name) {
    if (++count > MAX_NAME_LENGTH) return false;
  }
  return true;
}
