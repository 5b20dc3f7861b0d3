import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The name search's index, on the events table itself: names lowered (after NFC
 * normalisation), then (changed_at, id), so an exact search reads its matches in answer order
 * and a page starts right at its cursor. `text_pattern_ops` compares bytes, which lets a
 * prefix (`LIKE 'abc%'`) use it whatever the database's collation; equality works the same.
 * Built CONCURRENTLY, so a large table keeps taking publishes meanwhile, which needs the
 * migration outside a transaction. An earlier attempt that failed half-way leaves an invalid
 * index: dropped first.
 */
export class IndexNameChangeEventsSearch1769100000000 implements MigrationInterface {
  name = 'IndexNameChangeEventsSearch1769100000000';
  transaction = false;

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS "name_change_events_search_idx"`);
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY "name_change_events_search_idx" ON "name_change_events" (lower(normalize("name", NFC)) text_pattern_ops, "changed_at", "id")`,
    );
  }

  // Plain, not CONCURRENTLY: TypeORM reverts inside a transaction whatever the migration says.
  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS "name_change_events_search_idx"`);
  }
}
