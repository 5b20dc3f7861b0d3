import { Module } from '@nestjs/common';
import { BusModule } from '../bus/bus.module.js';
import { Owns } from '../config/owns.decorator.js';
import { KnownName } from './known-name.entity.js';
import { KnownNamesRepository } from './known-names.repository.js';
import { NameChangeEvent } from './name-change-event.entity.js';
import { NameChangeEventRepository } from './name-change-event.repository.js';
import { NameEventsService } from './name-events.service.js';
import { nameEventsMigrations } from './migrations/index.js';
import { PrivacyRepository } from './privacy.repository.js';
import { UserOptOut } from './user-opt-out.entity.js';

/**
 * The name-event domain: the stored events (entity, repository with named queries), the
 * detector's last known names, the ordering protocol every feature goes through
 * (NameEventsService), which refuses users who opted out, and erasure, opt-outs and
 * retention (PrivacyRepository). Its types are in `name-event.types.ts`.
 */
@Owns({
  migrations: nameEventsMigrations,
  entities: [NameChangeEvent, KnownName, UserOptOut],
})
@Module({
  imports: [BusModule],
  providers: [
    NameChangeEventRepository,
    KnownNamesRepository,
    PrivacyRepository,
    NameEventsService,
  ],
  exports: [NameChangeEventRepository, KnownNamesRepository, PrivacyRepository, NameEventsService],
})
export class NameEventsModule {}
