import { Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { DatabaseModule } from '../database/database.module.js';
import { NameEventsModule } from '../name-events/name-events.module.js';
import { RedisModule } from '../redis/redis.module.js';
import { WebhookAcks } from './webhook-acks.js';
import { webhooksMigrations } from './migrations/index.js';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository.js';
import {
  DELIVERY_WORKER_URL,
  deliveryWorkerUrl,
  WebhookDeliveryThread,
} from './webhook-delivery-thread.js';
import { WebhookEndpoint } from './webhook-endpoint.entity.js';
import { WebhookEndpointsController } from './webhook-endpoints.controller.js';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository.js';
import { WebhookEndpointsService } from './webhook-endpoints.service.js';
import { WebhookEventsConsumer } from './webhook-events.consumer.js';
import { WebhookQueuePosition } from './webhook-queue-position.entity.js';
import { WebhookQueueWatch } from './webhook-queue-watch.js';
import { WebhookSenders } from './webhook-senders.service.js';
import { webhooksConfig } from './webhooks.config.js';

/**
 * Outbound webhooks: the endpoint routes (administration, off unless ADMIN_TOKEN is set),
 * a consumer of the event log that tells the senders how far the log can be read, and the
 * senders that deliver it, one instance per endpoint at a time. Offers nothing to
 * other modules.
 */
@Owns({
  apiTags: [
    {
      name: 'webhooks',
      description:
        'Outbound webhooks: endpoints that get every name change, signed (administration, off unless ADMIN_TOKEN is set)',
    },
  ],
  config: [webhooksConfig],
  migrations: webhooksMigrations,
  entities: [WebhookEndpoint, WebhookQueuePosition],
})
@Module({
  imports: [DatabaseModule, NameEventsModule, RedisModule],
  controllers: [WebhookEndpointsController],
  providers: [
    WebhookEndpointsService,
    WebhookEndpointsRepository,
    WebhookDeliveriesRepository,
    WebhookQueueWatch,
    WebhookAcks,
    { provide: DELIVERY_WORKER_URL, useValue: deliveryWorkerUrl },
    WebhookDeliveryThread,
    WebhookSenders,
    WebhookEventsConsumer,
  ],
})
export class WebhooksModule {}
