import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateNameChangeEvents1763700000000 implements MigrationInterface {
  name = 'CreateNameChangeEvents1763700000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "name_change_events" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "user_id" text NOT NULL, "type" text NOT NULL, "name" text NOT NULL, "changed_at" TIMESTAMP WITH TIME ZONE NOT NULL, "stored_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "name_change_events_identity_key" UNIQUE ("user_id", "type", "name", "changed_at"), CONSTRAINT "name_change_events_type_check" CHECK ("type" IN ('username', 'displayname')), CONSTRAINT "PK_name_change_events_id" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "name_change_events_user_history_idx" ON "name_change_events" ("user_id", "changed_at", "id") `,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."name_change_events_user_history_idx"`);
    await queryRunner.query(`DROP TABLE "name_change_events"`);
  }
}
