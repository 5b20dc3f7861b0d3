import { CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/**
 * A user who asked not to be recorded: while the row exists, nothing is stored or broadcast
 * for them. It holds the user id and when they opted out, nothing else.
 */
@Entity({ name: 'user_opt_outs' })
export class UserOptOut {
  @PrimaryColumn({ name: 'user_id', type: 'text', primaryKeyConstraintName: 'user_opt_outs_pkey' })
  userId: string;

  @CreateDateColumn({ name: 'opted_out_at', type: 'timestamptz' })
  optedOutAt: Date;
}
