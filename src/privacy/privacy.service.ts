import { Injectable, Logger } from '@nestjs/common';
import { NameEventsService } from '../name-events/index.js';
import { OptOutsRepository } from './opt-outs.repository.js';
import type { ErasureResponseDto, OptOutResponseDto } from './privacy.dto.js';
import { PrivacyMetrics } from './privacy.metrics.js';

/**
 * Erasure and opt-out, each logged for the audit trail with the user id and the counts, and
 * never a name. The domain tells what reacts to them (on this instance before the answer, on
 * the others within milliseconds of the commit: see NameEventsService.eraseUser).
 */
@Injectable()
export class PrivacyService {
  private readonly logger = new Logger('Privacy');

  constructor(
    private readonly nameEvents: NameEventsService,
    private readonly optOuts: OptOutsRepository,
    private readonly metrics: PrivacyMetrics,
  ) {}

  async eraseNameHistory(userId: string): Promise<ErasureResponseDto> {
    const deleted = await this.nameEvents.eraseUser(userId);
    this.metrics.eventsErased.inc({ reason: 'erasure' }, deleted);
    this.logger.log(`Erased the name history of user ${userId}: ${deleted} entries deleted`);
    return { userId, deleted, code: 200 };
  }

  async optOut(userId: string): Promise<OptOutResponseDto> {
    // Recorded with the erasure, under the same locks: no event of the user is stored after
    // this answers, and none before it is left.
    const deleted = await this.nameEvents.eraseUser(userId, () => this.optOuts.add(userId));
    this.metrics.eventsErased.inc({ reason: 'opt_out' }, deleted);
    this.logger.log(
      `Opted out user ${userId}: ${deleted} entries deleted; nothing is recorded for them from now on`,
    );
    return { userId, optedOut: true, code: 200 };
  }

  async optIn(userId: string): Promise<OptOutResponseDto> {
    // No lock: a publish that still saw the opt-out refused the user, one that no longer sees
    // it records them, and either is a correct order.
    const wasOptedOut = await this.optOuts.remove(userId);
    this.logger.log(
      wasOptedOut
        ? `Opted user ${userId} back in: recording resumes`
        : `Opt-in of user ${userId}: the user was not opted out`,
    );
    return { userId, optedOut: false, code: 200 };
  }

  async getOptOut(userId: string): Promise<OptOutResponseDto> {
    const optedOut = (await this.optOuts.refusedAmong([userId])).has(userId);
    return { userId, optedOut, code: 200 };
  }
}
