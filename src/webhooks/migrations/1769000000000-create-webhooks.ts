import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The endpoints, the deliveries queued for them (a row per endpoint and event not yet
 * delivered: an erased event takes its rows with it), and how far the webhooks consumer has
 * queued (for `pending`, which also counts what it has not queued yet).
 */
export class CreateWebhooks1769000000000 implements MigrationInterface {
  name = 'CreateWebhooks1769000000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "webhook_endpoints" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "url" text NOT NULL, "format" text NOT NULL, "user_id" text, "type" text, "description" text, "secret" text, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "start_after" bigint NOT NULL, "last_delivered_event_id" bigint, "failing_since" TIMESTAMP WITH TIME ZONE, "gone_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "webhook_endpoints_format_check" CHECK ("format" IN ('standard', 'discord')), CONSTRAINT "webhook_endpoints_type_check" CHECK ("type" IN ('username', 'displayname')), CONSTRAINT "PK_webhook_endpoints" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_deliveries" ("endpoint_id" bigint NOT NULL, "event_id" bigint NOT NULL, CONSTRAINT "PK_webhook_deliveries" PRIMARY KEY ("endpoint_id", "event_id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_deliveries_event_idx" ON "webhook_deliveries" ("event_id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "FK_webhook_deliveries_endpoint" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "FK_webhook_deliveries_event" FOREIGN KEY ("event_id") REFERENCES "name_change_events"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_queue_position" ("id" boolean NOT NULL DEFAULT true, "event_id" bigint NOT NULL, CONSTRAINT "webhook_queue_position_one_row" CHECK ("id"), CONSTRAINT "PK_webhook_queue_position" PRIMARY KEY ("id"))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "webhook_queue_position"`);
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "FK_webhook_deliveries_event"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "FK_webhook_deliveries_endpoint"`,
    );
    await queryRunner.query(`DROP INDEX "public"."webhook_deliveries_event_idx"`);
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    await queryRunner.query(`DROP TABLE "webhook_endpoints"`);
  }
}
