import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateNameEventConsumers1768000000000 implements MigrationInterface {
  name = 'CreateNameEventConsumers1768000000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "name_event_consumers" ("name" text NOT NULL, "position" bigint NOT NULL, "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_name_event_consumers" PRIMARY KEY ("name"))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "name_event_consumers"`);
  }
}
