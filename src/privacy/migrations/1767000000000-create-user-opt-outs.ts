import { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateUserOptOuts1767000000000 implements MigrationInterface {
  name = 'CreateUserOptOuts1767000000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "user_opt_outs" ("user_id" text NOT NULL, "opted_out_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "user_opt_outs_pkey" PRIMARY KEY ("user_id"))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "user_opt_outs"`);
  }
}
