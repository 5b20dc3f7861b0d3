import { Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { sseConfig } from './events.config.js';
import { NameEventsModule } from '../name-events/index.js';
import { EventsController } from './events.controller.js';
import { EventStreamService } from './event-stream.service.js';
import { EventsMetrics } from './events.metrics.js';

/** GET /webhooks/prevnames/listen: the `@Sse()` stream over the name-event domain. */
@Owns({ config: [sseConfig] })
@Module({
  imports: [NameEventsModule],
  controllers: [EventsController],
  providers: [EventStreamService, EventsMetrics],
  exports: [EventStreamService],
})
export class EventsModule {}
