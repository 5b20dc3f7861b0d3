import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { BusModule } from '../bus/index.js';
import { RedisModule } from '../redis/index.js';
import { Owns } from '../config/owns.decorator.js';
import { DatabaseModule } from '../database/index.js';
import { ConsumerPositionsRepository } from './consumers/consumer-positions.repository.js';
import { consumersConfig } from './consumers/consumers.config.js';
import { NameEventConsumerPosition } from './consumers/name-event-consumer.entity.js';
import { NameEventConsumersService } from './consumers/name-event-consumers.service.js';
import { KnownNickname } from './known-nickname.entity.js';
import { KnownUser } from './known-user.entity.js';
import { KnownNamesRepository } from './known-names.repository.js';
import { nameEventsMigrations } from './migrations/index.js';
import { NameChangeEvent } from './name-change-event.entity.js';
import { NameEventLocks } from './name-event-locks.js';
import { NameEventLogRepository } from './name-event-log.repository.js';
import { NameEventRemovalsService } from './name-event-removals.service.js';
import { NameEventStreamsService } from './name-event-streams.service.js';
import { NameEventsService } from './name-events.service.js';
import { NameHistoryRepository } from './name-history.repository.js';
import { NameSearchRepository } from './name-search.repository.js';
import { RecordingGuardsService } from './recording-guards.service.js';
import { NameEventsMetrics } from './name-events.metrics.js';

/**
 * The name-event domain. What it offers the other modules:
 * - NameEventsService: the one way in for an event (POST, the detector), stored then
 *   broadcast in id order; erasure and retention; who must not be recorded.
 * - NameEventStreamsService: a listener's stream (replay, then live, no gap).
 * - NameHistoryRepository: users' histories.
 * - NameSearchRepository: who had a name (the search module's query).
 * - KnownNamesRepository: the detector's last known names.
 * - NameEventLogRepository: the event log (storing, reading, deleting), also as others read it
 *   (a consumer's handled events, counts after a position).
 * - Domain events (NameDomainEvents in `name-event.types.ts`): `user.erased`, `user.opted-out` and
 *   `events.removed`, handled with `@OnNameEvent`; NameEventRemovalsService carries removals to
 *   every instance, and tells whether this one hears them all.
 * - RecordingGuardsService: where a module registers who must not be recorded.
 * - `@NameEventConsumer` (consumers/): a durable consumer of the event log, run by
 *   NameEventConsumersService: every stored event, in id order, on one instance at a time.
 * Its types are in `name-event.types.ts`.
 */
@Owns({
  config: [consumersConfig],
  migrations: nameEventsMigrations,
  entities: [NameChangeEvent, KnownUser, KnownNickname, NameEventConsumerPosition],
})
@Module({
  imports: [BusModule, DatabaseModule, DiscoveryModule, EventEmitterModule.forRoot(), RedisModule],
  providers: [
    NameEventsMetrics,
    NameHistoryRepository,
    NameSearchRepository,
    KnownNamesRepository,
    NameEventLocks,
    NameEventLogRepository,
    ConsumerPositionsRepository,
    NameEventRemovalsService,
    RecordingGuardsService,
    NameEventsService,
    NameEventStreamsService,
    NameEventConsumersService,
  ],
  exports: [
    NameEventsService,
    NameEventStreamsService,
    NameHistoryRepository,
    NameSearchRepository,
    KnownNamesRepository,
    NameEventLogRepository,
    NameEventRemovalsService,
    RecordingGuardsService,
  ],
})
export class NameEventsModule {}
