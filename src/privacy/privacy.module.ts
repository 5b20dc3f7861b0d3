import { type MiddlewareConsumer, Module, type NestModule } from '@nestjs/common';
import { AdminModule } from '../admin/admin.module.js';
import { AdminTokenGuard } from '../admin/admin-token.guard.js';
import { Owns } from '../config/owns.decorator.js';
import { NameEventsModule } from '../name-events/name-events.module.js';
import { RedisConnections } from '../redis/redis-connections.js';
import { RedisModule } from '../redis/redis.module.js';
import { retentionConfig } from './privacy.config.js';
import { PrivacyController } from './privacy.controller.js';
import { PrivacyService } from './privacy.service.js';
import { LocalRetentionLease, RedisRetentionLease, RetentionLease } from './retention-lease.js';
import { RetentionJob } from './retention.job.js';

/** A run renews its lease after every batch; an instance that died frees it within this. */
const RETENTION_LEASE_MS = 60_000;

/**
 * The privacy administration (erasure, opt-out; off unless ADMIN_TOKEN is set) and the
 * retention job (off unless RETENTION_DAYS is set). Offers nothing to other modules: the
 * opt-out is enforced by the name-event domain itself.
 */
@Owns({
  apiTags: [
    {
      name: 'privacy',
      description: 'Erasure and opt-out (administration, off unless ADMIN_TOKEN is set)',
    },
  ],
  config: [retentionConfig],
})
@Module({
  imports: [AdminModule, NameEventsModule, RedisModule],
  controllers: [PrivacyController],
  providers: [
    PrivacyService,
    {
      provide: RetentionLease,
      inject: [RedisConnections],
      useFactory: (redis: RedisConnections): RetentionLease =>
        redis.enabled
          ? new RedisRetentionLease(
              () => redis.create('jobs'),
              redis.key('retention:lease'),
              RETENTION_LEASE_MS,
            )
          : new LocalRetentionLease(),
    },
    RetentionJob,
  ],
})
export class PrivacyModule implements NestModule {
  constructor(private readonly admin: AdminTokenGuard) {}

  configure(consumer: MiddlewareConsumer): void {
    this.admin.hideUnlessEnabled(consumer, PrivacyController);
  }
}
