import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateDetectorShardProgress1769500000000 implements MigrationInterface {
  name = 'CreateDetectorShardProgress1769500000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "detector_shard_progress" ("shard_id" integer NOT NULL, "user_partition" smallint NOT NULL, "session_id" text NOT NULL, "sequence" bigint NOT NULL, CONSTRAINT "PK_detector_shard_progress" PRIMARY KEY ("shard_id", "user_partition"))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "detector_shard_progress"`);
  }
}
