import { Module } from '@nestjs/common';
import { BusModule } from '../bus/bus.module.js';
import { KnownNamesRepository } from './known-names.repository.js';
import { NameChangeEventRepository } from './name-change-event.repository.js';
import { NameEventsService } from './name-events.service.js';

/**
 * The name-event domain: the stored events (entity, repository with named queries), the
 * detector's last known names, and the ordering protocol every feature goes through
 * (NameEventsService). Its types are in `name-event.types.ts`.
 */
@Module({
  imports: [BusModule],
  providers: [NameChangeEventRepository, KnownNamesRepository, NameEventsService],
  exports: [NameChangeEventRepository, KnownNamesRepository, NameEventsService],
})
export class NameEventsModule {}
