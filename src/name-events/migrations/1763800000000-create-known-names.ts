import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateKnownNames1763800000000 implements MigrationInterface {
  name = 'CreateKnownNames1763800000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "known_names" ("user_id" text NOT NULL, "field" text NOT NULL, "guild_id" text NOT NULL, "name" text, "seen_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "known_names_field_check" CHECK ("field" IN ('username', 'global_name', 'nickname')), CONSTRAINT "PK_known_names" PRIMARY KEY ("user_id", "field", "guild_id"))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "known_names"`);
  }
}
