import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The retention job's index: it finds entries by `changed_at` alone. Built CONCURRENTLY, so a
 * large table keeps taking publishes meanwhile, which needs the migration outside a
 * transaction. An earlier attempt that failed half-way leaves an invalid index: dropped first.
 */
export class IndexNameChangeEventsChangedAt1767000000001 implements MigrationInterface {
  name = 'IndexNameChangeEventsChangedAt1767000000001';
  transaction = false;

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `DROP INDEX CONCURRENTLY IF EXISTS "name_change_events_changed_at_idx"`,
    );
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY "name_change_events_changed_at_idx" ON "name_change_events" ("changed_at")`,
    );
  }

  // Plain, not CONCURRENTLY: TypeORM reverts inside a transaction whatever the migration says.
  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS "name_change_events_changed_at_idx"`);
  }
}
