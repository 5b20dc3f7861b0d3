import { Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { DatabaseModule } from '../database/index.js';
import { NameEventsModule } from '../name-events/index.js';
import { RedisModule } from '../redis/index.js';
import { Clock } from './clock.js';
import { discordConfig } from './detector.config.js';
import { DetectorOutbox } from './detector-outbox.js';
import { DETECTOR_SETTINGS, detectorSettings } from './detector.settings.js';
import { DiscordDetectorService } from './discord-detector.service.js';
import { MemberListRequester } from './member-list-requester.js';
import { detectorMigrations } from './migrations/index.js';
import { NameChangeDetector } from './name-change-detector.js';
import { ShardProgress } from './shard-progress.entity.js';
import { ShardProgressRepository } from './shard-progress.repository.js';
import { DetectorMetrics } from './detector.metrics.js';

/**
 * Discord gateway → compared with the known names → publish path (stored, then broadcast),
 * on when DISCORD_TOKEN is set. Offers nothing to other modules: its output is the events it
 * publishes.
 */
@Owns({
  config: [discordConfig],
  migrations: detectorMigrations,
  entities: [ShardProgress],
})
@Module({
  imports: [DatabaseModule, NameEventsModule, RedisModule],
  providers: [
    DetectorMetrics,
    { provide: DETECTOR_SETTINGS, inject: [discordConfig.KEY], useFactory: detectorSettings },
    Clock,
    ShardProgressRepository,
    DetectorOutbox,
    NameChangeDetector,
    MemberListRequester,
    DiscordDetectorService,
  ],
})
export class DetectorModule {}
