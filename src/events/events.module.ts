import { Module } from '@nestjs/common';
import { NameEventsModule } from '../name-events/name-events.module.js';
import { EventsController } from './events.controller.js';
import { EventStreamService } from './event-stream.service.js';

/** GET /webhooks/prevnames/listen: the `@Sse()` stream over the name-event domain. */
@Module({
  imports: [NameEventsModule],
  controllers: [EventsController],
  providers: [EventStreamService],
  exports: [EventStreamService],
})
export class EventsModule {}
