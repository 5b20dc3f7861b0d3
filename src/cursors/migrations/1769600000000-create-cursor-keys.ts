import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The key the cursors of the Link headers are signed with (HMAC-SHA256, CursorSigner): one
 * row, made here once, so every instance signs with the same key, before and after a restart,
 * and nobody outside the database can make a cursor. 32 bytes from two `gen_random_uuid()`s
 * (core Postgres since 13, and PGlite, where pgcrypto may be absent): 244 random bits, drawn
 * by Postgres's strong random source.
 */
export class CreateCursorKeys1769600000000 implements MigrationInterface {
  name = 'CreateCursorKeys1769600000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "cursor_keys" ("id" smallint NOT NULL DEFAULT 1, "key" bytea NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "cursor_keys_one_row" CHECK ("id" = 1), CONSTRAINT "PK_cursor_keys" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `INSERT INTO "cursor_keys" ("id", "key") VALUES (1, decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "cursor_keys"`);
  }
}
