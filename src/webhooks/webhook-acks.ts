import { Injectable, Logger } from '@nestjs/common';
import {
  type DeliveredUpTo,
  WebhookDeliveriesRepository,
} from './webhook-deliveries.repository.js';

/** Statements recording 2xx are at least this far apart: a 2xx waits at most this long. */
export const ACK_GATHER_MS = 200;

/**
 * The 2xx this instance's senders got and have not recorded yet. A sender does not wait for
 * its 2xx to be recorded before its next attempt: a 2xx is recorded at once (in the next turn
 * of the event loop) when none was recorded in the last ACK_GATHER_MS, else with every 2xx
 * that comes until then, by one statement made while the senders go on (a 2xx records every
 * event before it). So the status of a quiet endpoint is current within milliseconds, and a
 * busy instance makes five statements a second however many 2xx it gets. While a statement
 * is under way, the next 2xx wait for the one after it. A sender that makes a statement of its own (a read, a failure) takes
 * its unrecorded 2xx into it, after the statement under way: so a failure recorded after a
 * 2xx is never undone by it.
 */
@Injectable()
export class WebhookAcks {
  private readonly logger = new Logger('Webhooks');
  private readonly unrecorded = new Map<string, DeliveredUpTo>();
  private recording: Promise<void> = Promise.resolve();
  private scheduled = false;
  /** When the last statement was started (ms since the epoch). */
  private lastRecordAt = 0;

  constructor(private readonly deliveries: WebhookDeliveriesRepository) {}

  /**
   * `upTo.eventId` got its 2xx from `endpointId` (or, null, the endpoint read past events not
   * its own): recorded at once, or within ACK_GATHER_MS when 2xx keep coming.
   */
  delivered(endpointId: string, upTo: DeliveredUpTo): void {
    this.unrecorded.set(endpointId, merged(this.unrecorded.get(endpointId), upTo));
    if (this.scheduled) return;
    this.scheduled = true;
    const wait = Math.max(0, this.lastRecordAt + ACK_GATHER_MS - Date.now());
    setTimeout(() => {
      this.scheduled = false;
      this.lastRecordAt = Date.now();
      this.recording = this.recording.then(() => this.record());
    }, wait);
  }

  /** The endpoint's 2xx not recorded yet (null if none), for a statement of its sender's. */
  async take(endpointId: string): Promise<DeliveredUpTo | null> {
    await this.recording;
    const upTo = this.unrecorded.get(endpointId) ?? null;
    this.unrecorded.delete(endpointId);
    return upTo;
  }

  /** Gives back what `take` gave when the statement that was to record it failed. */
  untake(endpointId: string, upTo: DeliveredUpTo | null): void {
    if (upTo !== null) {
      this.unrecorded.set(endpointId, merged(upTo, this.unrecorded.get(endpointId)));
    }
  }

  /** Records the endpoint's 2xx not recorded yet (its sender stops). */
  async flush(endpointId: string): Promise<void> {
    const upTo = await this.take(endpointId);
    if (upTo === null) return;
    await this.deliveries
      .delivered([[endpointId, upTo]])
      .catch((error: Error) => this.logger.warn(`Endpoint ${endpointId}: ${error.message}`));
  }

  private async record(): Promise<void> {
    if (this.unrecorded.size === 0) return;
    const acks = [...this.unrecorded];
    this.unrecorded.clear();
    try {
      await this.deliveries.delivered(acks);
    } catch (error) {
      // Recorded by the next statement instead (or covered by a later 2xx).
      for (const [endpointId, upTo] of acks) this.untake(endpointId, upTo);
      this.logger.warn(`Could not record deliveries: ${(error as Error).message}`);
    }
  }
}

/** What `earlier` and then `later` record together (either may be missing). */
function merged(
  earlier: DeliveredUpTo | undefined,
  later: DeliveredUpTo | undefined,
): DeliveredUpTo {
  if (!earlier) return later!;
  if (!later) return earlier;
  return {
    eventId: later.eventId ?? earlier.eventId,
    through: BigInt(later.through) > BigInt(earlier.through) ? later.through : earlier.through,
  };
}
