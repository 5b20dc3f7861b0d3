import { Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { publishConfig } from './publish.config.js';
import { NameEventsModule } from '../name-events/index.js';
import { RateLimitModule } from '../rate-limit/index.js';
import { PublishController } from './publish.controller.js';
import { PublishService } from './publish.service.js';

/** POST /webhooks/prevnames: the route, its token and rate limit, and its use case. */
@Owns({
  config: [publishConfig],
  apiTags: [{ name: 'events', description: 'Publishing and streaming name change events' }],
})
@Module({
  imports: [NameEventsModule, RateLimitModule],
  controllers: [PublishController],
  providers: [PublishService],
})
export class PublishModule {}
