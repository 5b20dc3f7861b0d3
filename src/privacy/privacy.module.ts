import { Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { DatabaseModule } from '../database/index.js';
import { NameEventsModule } from '../name-events/index.js';
import { RedisModule } from '../redis/index.js';
import { privacyMigrations } from './migrations/index.js';
import { OptOutsRepository } from './opt-outs.repository.js';
import { retentionConfig } from './privacy.config.js';
import { PrivacyController } from './privacy.controller.js';
import { PrivacyMetrics } from './privacy.metrics.js';
import { PrivacyService } from './privacy.service.js';
import { RetentionJob } from './retention.job.js';
import { UserOptOut } from './user-opt-out.entity.js';

/**
 * The privacy administration (erasure, opt-out; off unless ADMIN_TOKEN is set) and the
 * retention job (off unless RETENTION_DAYS is set). Offers nothing to other modules: its
 * opt-outs reach the name-event domain as a RecordingGuard (OptOutsRepository), which every
 * publish and every comparison of the detector consults.
 */
@Owns({
  apiTags: [
    {
      name: 'privacy',
      description: 'Erasure and opt-out (administration, off unless ADMIN_TOKEN is set)',
    },
  ],
  config: [retentionConfig],
  migrations: privacyMigrations,
  entities: [UserOptOut],
})
@Module({
  imports: [DatabaseModule, NameEventsModule, RedisModule],
  controllers: [PrivacyController],
  providers: [PrivacyService, PrivacyMetrics, OptOutsRepository, RetentionJob],
})
export class PrivacyModule {}
