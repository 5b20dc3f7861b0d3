import { Column, Entity, PrimaryColumn } from 'typeorm';

const PRIMARY_KEY = 'PK_known_nicknames';

/**
 * A member's nickname in one server as the detector last saw it (see KnownUser). Written with
 * or after its user's KnownUser and deleted with it: the lookup probes for it only where the
 * user is known (KnownNamesRepository.findOfMembers).
 */
@Entity({ name: 'known_nicknames' })
export class KnownNickname {
  @PrimaryColumn({ name: 'user_id', type: 'text', primaryKeyConstraintName: PRIMARY_KEY })
  userId: string;

  @PrimaryColumn({ name: 'guild_id', type: 'text', primaryKeyConstraintName: PRIMARY_KEY })
  guildId: string;

  /** Null: no nickname in this server. */
  @Column({ type: 'text', nullable: true })
  nickname: string | null;

  @Column({ name: 'seen_at', type: 'timestamptz' })
  seenAt: Date;
}
