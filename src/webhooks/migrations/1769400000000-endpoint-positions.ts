import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An endpoint's position in the event table (`delivered_through`) instead of a row per
 * endpoint and event not yet delivered: its senders read the matching events after it, up to
 * the webhooks consumer's position, straight from name_change_events (an erased event is not
 * there to read). Each endpoint starts after the first event still queued for it, or, with
 * none queued, after what the consumer had queued, and never before where it started
 * (`start_after`, which nothing reads once the position starts there, so it goes). The tables
 * are locked first, so an instance of the previous version still running waits, then fails
 * its statements until it is replaced: no event it was sending is lost, it is sent again.
 */
export class EndpointPositions1769400000000 implements MigrationInterface {
  name = 'EndpointPositions1769400000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `LOCK TABLE "webhook_endpoints", "webhook_deliveries", "webhook_queue_position" IN ACCESS EXCLUSIVE MODE`,
    );
    await queryRunner.query(`ALTER TABLE "webhook_endpoints" ADD "delivered_through" bigint`);
    await queryRunner.query(
      `UPDATE "webhook_endpoints" w
          SET "delivered_through" = greatest(w."start_after",
                coalesce((SELECT min(d."event_id") - 1 FROM "webhook_deliveries" d WHERE d."endpoint_id" = w."id"),
                         (SELECT "event_id" FROM "webhook_queue_position"), 0))`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_endpoints" ALTER COLUMN "delivered_through" SET NOT NULL`,
    );
    // Where an endpoint started is where its position starts; nothing reads it after that.
    await queryRunner.query(`ALTER TABLE "webhook_endpoints" DROP COLUMN "start_after"`);
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
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
      `INSERT INTO "webhook_deliveries" ("endpoint_id", "event_id")
       SELECT w."id", e."id" FROM "webhook_endpoints" w JOIN "name_change_events" e
           ON e."id" > w."delivered_through"
          AND e."id" <= coalesce((SELECT "event_id" FROM "webhook_queue_position"), 0)
          AND (w."user_id" IS NULL OR e."user_id" = w."user_id")
          AND (w."type" IS NULL OR e."type" = w."type")`,
    );
    // Not where it started, which is gone, but nothing before its position is sent again.
    await queryRunner.query(`ALTER TABLE "webhook_endpoints" ADD "start_after" bigint`);
    await queryRunner.query(`UPDATE "webhook_endpoints" SET "start_after" = "delivered_through"`);
    await queryRunner.query(
      `ALTER TABLE "webhook_endpoints" ALTER COLUMN "start_after" SET NOT NULL`,
    );
    await queryRunner.query(`ALTER TABLE "webhook_endpoints" DROP COLUMN "delivered_through"`);
  }
}
