import { Injectable, Logger } from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service.js';
import { PrivacyRepository } from '../name-events/privacy.repository.js';
import type { ErasureResponseDto, OptOutResponseDto } from './privacy.dto.js';

/**
 * Erasure and opt-out, each logged for the audit trail with the user id and the counts, and
 * never a name.
 */
@Injectable()
export class PrivacyService {
  private readonly logger = new Logger('Privacy');

  constructor(
    private readonly privacy: PrivacyRepository,
    private readonly metrics: MetricsService,
  ) {}

  async eraseNameHistory(userId: string): Promise<ErasureResponseDto> {
    const deleted = await this.privacy.eraseUser(userId);
    this.metrics.eventsErased.inc({ reason: 'erasure' }, deleted);
    this.logger.log(`Erased the name history of user ${userId}: ${deleted} entries deleted`);
    return { userId, deleted, code: 200 };
  }

  async optOut(userId: string): Promise<OptOutResponseDto> {
    const deleted = await this.privacy.optOut(userId);
    this.metrics.eventsErased.inc({ reason: 'opt_out' }, deleted);
    this.logger.log(
      `Opted out user ${userId}: ${deleted} entries deleted; nothing is recorded for them from now on`,
    );
    return { userId, optedOut: true, code: 200 };
  }

  async optIn(userId: string): Promise<OptOutResponseDto> {
    const wasOptedOut = await this.privacy.optIn(userId);
    this.logger.log(
      wasOptedOut
        ? `Opted user ${userId} back in: recording resumes`
        : `Opt-in of user ${userId}: the user was not opted out`,
    );
    return { userId, optedOut: false, code: 200 };
  }

  async getOptOut(userId: string): Promise<OptOutResponseDto> {
    return { userId, optedOut: await this.privacy.isOptedOut(userId), code: 200 };
  }
}
