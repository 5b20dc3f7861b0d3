import { Module } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { AppConfig } from '../config/configuration.js';
import { KnownNamesRepository } from '../name-events/known-names.repository.js';
import { PublishModule } from '../publish/publish.module.js';
import { Clock } from './clock.js';
import { DetectorLease, LocalDetectorLease, RedisDetectorLease } from './detector-lease.js';
import { DetectorOutbox } from './detector-outbox.js';
import { DETECTOR_SETTINGS, detectorSettings, type DetectorSettings } from './detector.settings.js';
import { DiscordClientFactory } from './discord-client.factory.js';
import { DiscordDetectorService } from './discord-detector.service.js';
import { MemberListRequester } from './member-list-requester.js';
import { NameChangeDetector } from './name-change-detector.js';

/**
 * Discord gateway → compared with the known names → publish path (stored, then broadcast),
 * on when DISCORD_TOKEN is set. Offers nothing to other modules: its output is the events it
 * publishes. (KnownNamesRepository is provided here until the name-events domain has a module
 * of its own to export it.)
 */
@Module({
  imports: [PublishModule],
  providers: [
    {
      provide: DETECTOR_SETTINGS,
      inject: [ConfigService],
      useFactory: (config: ConfigService<AppConfig, true>): DetectorSettings =>
        detectorSettings(
          config.get('discord', { infer: true }),
          config.get('redis', { infer: true }),
        ),
    },
    {
      provide: DetectorLease,
      inject: [DETECTOR_SETTINGS],
      useFactory: ({ redisUrl, leaseKey, leaseMs }: DetectorSettings): DetectorLease =>
        redisUrl ? new RedisDetectorLease(redisUrl, leaseKey, leaseMs) : new LocalDetectorLease(),
    },
    Clock,
    DiscordClientFactory,
    DetectorOutbox,
    NameChangeDetector,
    MemberListRequester,
    KnownNamesRepository,
    DiscordDetectorService,
  ],
})
export class DetectorModule {}
