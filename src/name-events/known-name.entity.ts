import { Check, Column, Entity, PrimaryColumn } from 'typeorm';

export const KNOWN_NAME_FIELDS = ['username', 'global_name', 'nickname'] as const;
export type KnownNameField = (typeof KNOWN_NAME_FIELDS)[number];

const PRIMARY_KEY = 'PK_known_names';

/**
 * A name as the Discord detector last saw it: a user's username and global display name, or
 * a member's nickname in one server. Not history: it is the "before" the next observation is
 * compared with, so that a change made while the detector was not watching is still found.
 * It is kept current in the same transaction as the event a change produces.
 */
@Entity({ name: 'known_names' })
@Check('known_names_field_check', `"field" IN ('username', 'global_name', 'nickname')`)
export class KnownName {
  @PrimaryColumn({ name: 'user_id', type: 'text', primaryKeyConstraintName: PRIMARY_KEY })
  userId: string;

  @PrimaryColumn({ type: 'text', primaryKeyConstraintName: PRIMARY_KEY })
  field: KnownNameField;

  /** The server of a nickname; '' for a user's own names (part of the key, so never null). */
  @PrimaryColumn({ name: 'guild_id', type: 'text', primaryKeyConstraintName: PRIMARY_KEY })
  guildId: string;

  /** Null: no global display name, or no nickname. */
  @Column({ type: 'text', nullable: true })
  name: string | null;

  /** When the detector saw this value: an older observation never overwrites a newer one. */
  @Column({ name: 'seen_at', type: 'timestamptz' })
  seenAt: Date;
}
