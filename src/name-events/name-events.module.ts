import { Module } from '@nestjs/common';
import { BusModule } from '../bus/bus.module.js';
import { Owns } from '../config/owns.decorator.js';
import { DatabaseModule } from '../database/database.module.js';
import { KnownName } from './known-name.entity.js';
import { KnownNamesRepository } from './known-names.repository.js';
import { nameEventsMigrations } from './migrations/index.js';
import { NameChangeEvent } from './name-change-event.entity.js';
import { NameChangeEventRepository } from './name-change-event.repository.js';
import { NameEventLocks } from './name-event-locks.js';
import { NameEventStreams } from './name-event-streams.service.js';
import { NameEventsService } from './name-events.service.js';
import { NameHistoryRepository } from './name-history.repository.js';
import { RecordingGuards } from './recording-guards.service.js';

/**
 * The name-event domain. What it offers the other modules:
 * - NameEventsService: the one way in for an event (POST, the detector), stored then
 *   broadcast in id order; erasure and retention; who must not be recorded.
 * - NameEventStreams: a listener's stream (replay, then live, no gap).
 * - NameHistoryRepository: users' histories.
 * - KnownNamesRepository: the detector's last known names.
 * - RecordingGuards: where a module registers who must not be recorded.
 * Its types are in `name-event.types.ts`.
 */
@Owns({
  migrations: nameEventsMigrations,
  entities: [NameChangeEvent, KnownName],
})
@Module({
  imports: [BusModule, DatabaseModule],
  providers: [
    NameChangeEventRepository,
    NameHistoryRepository,
    KnownNamesRepository,
    NameEventLocks,
    RecordingGuards,
    NameEventsService,
    NameEventStreams,
  ],
  exports: [
    NameEventsService,
    NameEventStreams,
    NameHistoryRepository,
    KnownNamesRepository,
    RecordingGuards,
  ],
})
export class NameEventsModule {}
