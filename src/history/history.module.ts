import { Module } from '@nestjs/common';
import { HistoryController } from './history.controller.js';
import { HistoryService } from './history.service.js';
import { NameChangeEventRepository } from './name-change-event.repository.js';

/** The name history: the stored events and the endpoint that reads them. */
@Module({
  controllers: [HistoryController],
  providers: [HistoryService, NameChangeEventRepository],
  exports: [NameChangeEventRepository],
})
export class HistoryModule {}
