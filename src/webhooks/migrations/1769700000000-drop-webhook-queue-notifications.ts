import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The senders hear of removals from the name-event domain (`events.removed`, carried across
 * instances by its own notifications) and read up to the webhooks consumer's own position:
 * the triggers this module put on name_change_events and webhook_endpoints, their function,
 * and the copy of the consumer's position (webhook_queue_position) go.
 */
export class DropWebhookQueueNotifications1769700000000 implements MigrationInterface {
  name = 'DropWebhookQueueNotifications1769700000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `DROP TRIGGER "webhook_endpoints_webhook_queue_changed" ON "webhook_endpoints"`,
    );
    await queryRunner.query(
      `DROP TRIGGER "name_change_events_webhook_queue_changed" ON "name_change_events"`,
    );
    await queryRunner.query(`DROP FUNCTION "webhook_queue_changed"()`);
    await queryRunner.query(`DROP TABLE "webhook_queue_position"`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "webhook_queue_position" ("id" boolean NOT NULL DEFAULT true, "event_id" bigint NOT NULL, CONSTRAINT "webhook_queue_position_one_row" CHECK ("id"), CONSTRAINT "PK_webhook_queue_position" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `INSERT INTO "webhook_queue_position" ("id", "event_id")
       SELECT true, "position" FROM "name_event_consumers" WHERE "name" = 'webhooks'`,
    );
    await queryRunner.query(
      `CREATE FUNCTION "webhook_queue_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         PERFORM pg_notify('webhook_queue_changed', '');
         RETURN NULL;
       END $$`,
    );
    await queryRunner.query(
      `CREATE TRIGGER "name_change_events_webhook_queue_changed" AFTER DELETE ON "name_change_events"
       FOR EACH STATEMENT EXECUTE FUNCTION "webhook_queue_changed"()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER "webhook_endpoints_webhook_queue_changed" AFTER DELETE ON "webhook_endpoints"
       FOR EACH STATEMENT EXECUTE FUNCTION "webhook_queue_changed"()`,
    );
  }
}
