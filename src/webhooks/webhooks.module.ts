import { Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { DatabaseModule } from '../database/index.js';
import { NameEventsModule } from '../name-events/index.js';
import { RedisModule } from '../redis/index.js';
import { webhooksMigrations } from './migrations/index.js';
import { WebhookEndpoint } from './webhook-endpoint.entity.js';
import { WebhookEndpointsController } from './webhook-endpoints.controller.js';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository.js';
import { WebhookEndpointsService } from './webhook-endpoints.service.js';
import { WebhookSendersService } from './webhook-senders.service.js';
import { webhooksConfig } from './webhooks.config.js';
import { WebhooksMetrics } from './webhooks.metrics.js';

/**
 * Outbound webhooks: the endpoint routes (administration, off unless ADMIN_TOKEN is set),
 * a consumer of the event log whose position is how far the senders read it, and the
 * senders that deliver it, on the event loop, one instance per endpoint at a time. Reaches
 * the domain only through what NameEventsModule exports. Offers nothing to other modules.
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
  entities: [WebhookEndpoint],
})
@Module({
  imports: [DatabaseModule, NameEventsModule, RedisModule],
  controllers: [WebhookEndpointsController],
  providers: [
    WebhooksMetrics,
    WebhookEndpointsService,
    WebhookEndpointsRepository,
    WebhookSendersService,
  ],
})
export class WebhooksModule {}
