import { Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { CursorsModule } from '../cursors/index.js';
import { NameEventsModule } from '../name-events/index.js';
import { historyConfig } from './history.config.js';
import { HistoryController } from './history.controller.js';
import { HistoryService } from './history.service.js';

/** GET /users/:userId/prevnames: a user's name history, read from the name-event domain. */
@Owns({
  apiTags: [{ name: 'history', description: "Users' previous names" }],
  config: [historyConfig],
})
@Module({
  imports: [CursorsModule, NameEventsModule],
  controllers: [HistoryController],
  providers: [HistoryService],
})
export class HistoryModule {}
