import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A notification on `webhook_queue_changed` when a statement takes queued deliveries away:
 * events deleted (erasure, opt-out, retention) or endpoints deleted. The senders listen, and
 * look again before their next attempt (WebhookQueueWatch).
 */
export class NotifyWebhookQueueChanges1769200000000 implements MigrationInterface {
  name = 'NotifyWebhookQueueChanges1769200000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
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

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `DROP TRIGGER "webhook_endpoints_webhook_queue_changed" ON "webhook_endpoints"`,
    );
    await queryRunner.query(
      `DROP TRIGGER "name_change_events_webhook_queue_changed" ON "name_change_events"`,
    );
    await queryRunner.query(`DROP FUNCTION "webhook_queue_changed"()`);
  }
}
