import { Module } from '@nestjs/common';
import { BusModule } from '../bus/bus.module.js';
import { NameChangeEventRepository } from './name-change-event.repository.js';
import { NameEventsService } from './name-events.service.js';
import { PrivacyRepository } from './privacy.repository.js';

/**
 * The name-event domain: the stored events (entity, repository with named queries) and the
 * ordering protocol every feature goes through (NameEventsService), which refuses users who
 * opted out; erasure, opt-outs and retention (PrivacyRepository). Its types are in
 * `name-event.types.ts`.
 */
@Module({
  imports: [BusModule],
  providers: [NameChangeEventRepository, PrivacyRepository, NameEventsService],
  exports: [NameChangeEventRepository, PrivacyRepository, NameEventsService],
})
export class NameEventsModule {}
