import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A user's own names as the Discord detector last saw them: not history, but the "before" the
 * next observation is compared with, so that a change made while the detector was not
 * watching is still found. Kept current in the same transaction as the event a change
 * produces. A user's nickname in each server is a KnownNickname.
 */
@Entity({ name: 'known_users' })
export class KnownUser {
  @PrimaryColumn({ name: 'user_id', type: 'text', primaryKeyConstraintName: 'PK_known_users' })
  userId: string;

  @Column({ type: 'text' })
  username: string;

  /** Null: no global display name (or none said yet, which compares the same). */
  @Column({ name: 'global_name', type: 'text', nullable: true })
  globalName: string | null;

  /** When the detector saw these names: an older observation never overwrites a newer one. */
  @Column({ name: 'seen_at', type: 'timestamptz' })
  seenAt: Date;
}
