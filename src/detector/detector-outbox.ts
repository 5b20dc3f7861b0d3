import { Inject, Injectable, Logger } from '@nestjs/common';
import { UserOptedOutError } from '../name-events/user-opted-out.error.js';
import { PublishService, type NameChange } from '../publish/publish.service.js';
import { DETECTOR_SETTINGS, type DetectorSettings } from './detector.settings.js';
import { InterruptibleDelay } from './interruptible-delay.js';

/** How long shutdown waits for a publish already under way. */
const STOP_GRACE_MS = 5_000;

/**
 * Detected changes on their way through the publish path (store, then broadcast), one at a
 * time and in the order they were detected. A failure is logged with the event and retried
 * with back-off, as long as the process runs: a storage or broker outage costs latency, not
 * events, and never reaches the gateway client. A change nobody is listening to is stored,
 * and that is success here (the POST's "no listener" 500 does not apply). A change of a user
 * who opted out is refused for good: it is dropped, and its log line names no name.
 */
@Injectable()
export class DetectorOutbox {
  private readonly logger = new Logger('DiscordDetector');
  private readonly pending: NameChange[] = [];
  private draining: Promise<void> = Promise.resolve();
  private running = false;
  private stopped = false;
  private readonly delay = new InterruptibleDelay();

  constructor(
    private readonly publisher: PublishService,
    @Inject(DETECTOR_SETTINGS) private readonly settings: DetectorSettings,
  ) {}

  /** How many changes are waiting (the one being published included). */
  get size(): number {
    return this.pending.length;
  }

  enqueue(change: NameChange): void {
    if (this.stopped) {
      this.logger.error(`Dropped a detected name change during shutdown: ${show(change)}`);
      return;
    }
    if (this.pending.length >= this.settings.maxPending) {
      // Only reachable during a long outage; memory stays bounded, and the log keeps the event.
      this.logger.error(
        `Dropped a detected name change: ${this.pending.length} are waiting to be published: ${show(change)}`,
      );
      return;
    }
    this.pending.push(change);
    if (!this.running) this.draining = this.drain();
  }

  /** Stops retrying; waits briefly for a publish under way; logs what is left unpublished. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.delay.interrupt();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.draining,
      new Promise((resolve) => (timer = setTimeout(resolve, STOP_GRACE_MS))),
    ]);
    clearTimeout(timer);
    for (const change of this.pending.splice(0)) {
      this.logger.error(`Detected name change not published before shutdown: ${show(change)}`);
    }
  }

  private async drain(): Promise<void> {
    // Set and cleared synchronously, so a change enqueued at any moment finds a drain running.
    this.running = true;
    try {
      let failures = 0;
      while (!this.stopped && this.pending.length > 0) {
        const change = this.pending[0];
        try {
          const { event, created, receivers } = await this.publisher.publish(change);
          this.pending.shift();
          failures = 0;
          this.logger.log(
            `Recorded a ${change.type} change of user ${change.userId} as event ${event.id}` +
              `${created ? '' : ' (stored already)'}; ` +
              (receivers === 0
                ? 'no listener connected'
                : `sent to ${receivers} instance(s) with listeners`),
          );
        } catch (error) {
          if (error instanceof UserOptedOutError) {
            this.pending.shift();
            failures = 0;
            this.logger.log(
              `Dropped a detected ${change.type} change of user ${change.userId}: the user has opted out`,
            );
            continue;
          }
          failures += 1;
          const wait = Math.min(
            this.settings.publishRetryMs * 2 ** (failures - 1),
            this.settings.publishRetryMaxMs,
          );
          this.logger.warn(
            `Could not publish a detected name change (attempt ${failures}; next in ${wait} ms): ` +
              `${(error as Error).name}: ${(error as Error).message}: ${show(change)}`,
          );
          await this.delay.wait(wait);
        }
      }
    } finally {
      this.running = false;
    }
  }
}

function show(change: NameChange): string {
  return JSON.stringify({ ...change, changedAt: change.changedAt.toISOString() });
}
