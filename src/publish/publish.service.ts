import { Injectable } from '@nestjs/common';
import { NameEventsService } from '../name-events/name-events.service.js';
import type { NewNameEvent, PublishOutcome, SqlSession } from '../name-events/name-event.types.js';

export type NameChange = NewNameEvent;
export type { PublishOutcome };

/**
 * The one way in for a name change, from POST and from the detector alike: it goes through
 * the name-event domain's ordering protocol (stored, then broadcast).
 */
@Injectable()
export class PublishService {
  constructor(private readonly nameEvents: NameEventsService) {}

  /**
   * Rejects with StorageUnavailableError (nothing stored, nothing sent) or
   * BusUnavailableError (stored, not sent: a retry sends it with the same id).
   */
  publish(change: NameChange): Promise<PublishOutcome> {
    return this.nameEvents.publish(change);
  }

  /**
   * The detector's way in: publishes what `detect` finds, together with what it writes on the
   * session (its known names), atomically. See NameEventsService.publishDetected.
   */
  publishDetected(
    detect: (session: SqlSession) => Promise<NameChange[]>,
  ): Promise<PublishOutcome[]> {
    return this.nameEvents.publishDetected(detect);
  }
}
