import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The detector's known names, one row per user (username and global name) and one per member
 * (nickname), not one per name: a first sighting writes two rows, not three, into two narrower
 * keys. What was known carries over; the old table goes in the same transaction, so that an
 * instance of the previous version still running fails its comparisons (and retries) rather
 * than move forward names that nobody reads any more.
 */
export class SplitKnownNames1769300000000 implements MigrationInterface {
  name = 'SplitKnownNames1769300000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    // First: what an older instance commits after the copy would be lost with the table, and
    // the change it recorded with it found again (the known name behind it).
    await queryRunner.query(`LOCK TABLE "known_names" IN ACCESS EXCLUSIVE MODE`);
    await queryRunner.query(
      `CREATE TABLE "known_users" ("user_id" text NOT NULL, "username" text NOT NULL, "global_name" text, "seen_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_known_users" PRIMARY KEY ("user_id"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "known_nicknames" ("user_id" text NOT NULL, "guild_id" text NOT NULL, "nickname" text, "seen_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_known_nicknames" PRIMARY KEY ("user_id", "guild_id"))`,
    );
    await queryRunner.query(
      `INSERT INTO "known_users" ("user_id", "username", "global_name", "seen_at")
       SELECT "user_id", max("name") FILTER (WHERE "field" = 'username'),
              max("name") FILTER (WHERE "field" = 'global_name'), max("seen_at")
         FROM "known_names" WHERE "guild_id" = ''
        GROUP BY "user_id" HAVING count(*) FILTER (WHERE "field" = 'username') > 0`,
    );
    await queryRunner.query(
      `INSERT INTO "known_nicknames" ("user_id", "guild_id", "nickname", "seen_at")
       SELECT n."user_id", n."guild_id", n."name", n."seen_at" FROM "known_names" n
        WHERE n."field" = 'nickname'
          AND EXISTS (SELECT 1 FROM "known_users" u WHERE u."user_id" = n."user_id")`,
    );
    await queryRunner.query(`DROP TABLE "known_names"`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "known_names" ("user_id" text NOT NULL, "field" text NOT NULL, "guild_id" text NOT NULL, "name" text, "seen_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "known_names_field_check" CHECK ("field" IN ('username', 'global_name', 'nickname')), CONSTRAINT "PK_known_names" PRIMARY KEY ("user_id", "field", "guild_id"))`,
    );
    await queryRunner.query(
      `INSERT INTO "known_names" ("user_id", "field", "guild_id", "name", "seen_at")
       SELECT "user_id", 'username', '', "username", "seen_at" FROM "known_users"
       UNION ALL SELECT "user_id", 'global_name', '', "global_name", "seen_at" FROM "known_users"
       UNION ALL SELECT "user_id", 'nickname', "guild_id", "nickname", "seen_at" FROM "known_nicknames"`,
    );
    await queryRunner.query(`DROP TABLE "known_nicknames"`);
    await queryRunner.query(`DROP TABLE "known_users"`);
  }
}
