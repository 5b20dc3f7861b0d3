import { Module } from '@nestjs/common';
import { BusModule } from '../bus/bus.module.js';
import { HistoryModule } from '../history/history.module.js';
import { EventsController } from './events.controller.js';
import { EventStreamService } from './event-stream.service.js';

/** GET /webhooks/prevnames/listen: the SSE fan-out, with replay from the history. */
@Module({
  imports: [BusModule, HistoryModule],
  controllers: [EventsController],
  providers: [EventStreamService],
  exports: [EventStreamService],
})
export class EventsModule {}
