import { Injectable } from '@nestjs/common';
import { SqlService, textArray } from '../database/sql.service.js';

/** Every query on user_opt_outs. Statements join the caller's unit of work. */
@Injectable()
export class OptOutsRepository {
  constructor(private readonly sql: SqlService) {}

  /** Records the opt-out (again: nothing changes). */
  async add(userId: string): Promise<void> {
    await this.sql.query(
      'INSERT INTO user_opt_outs (user_id) VALUES ($1) ON CONFLICT (user_id) DO NOTHING',
      [userId],
    );
  }

  /** Lifts the opt-out; returns whether there was one. */
  async remove(userId: string): Promise<boolean> {
    const { rowCount } = await this.sql.execute('DELETE FROM user_opt_outs WHERE user_id = $1', [
      userId,
    ]);
    return rowCount > 0;
  }

  async has(userId: string): Promise<boolean> {
    const rows = await this.sql.query({
      name: 'is-opted-out',
      text: 'SELECT 1 FROM user_opt_outs WHERE user_id = $1',
      values: [userId],
    });
    return rows.length > 0;
  }

  /** Which of `userIds` have opted out. */
  async findAmong(userIds: readonly string[]): Promise<Set<string>> {
    const rows = await this.sql.query<{ userId: string }>({
      name: 'find-opted-out',
      text: 'SELECT user_id AS "userId" FROM user_opt_outs WHERE user_id = ANY($1::text[])',
      values: [textArray(userIds)],
    });
    return new Set(rows.map((row) => row.userId));
  }
}
