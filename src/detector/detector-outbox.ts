import { Inject, Injectable, Logger } from '@nestjs/common';
import { withTimeout } from '../common/with-timeout.js';
import { DetectorMetrics } from './detector.metrics.js';
import {
  KnownNamesRepository,
  NameEventsService,
  USER_PARTITIONS,
  userPartitionOf,
} from '../name-events/index.js';
import { DETECTOR_SETTINGS, type DetectorSettings } from './detector.settings.js';
import type { MemberObservation } from './member-observation.js';
import { CompareLane, type Counts } from './compare-lane.js';
import type { ReconciliationRun } from './reconciliation-run.js';
import { ShardProgressRepository } from './shard-progress.repository.js';

/** How long shutdown waits for the batches already under way. */
const STOP_GRACE_MS = 5_000;

/**
 * Gateway observations on their way to the known names and the publish path: each batch is
 * compared with the last known names, and the changes found are stored with the names they
 * move forward, then broadcast (NameEventsService.publishDetected), live updates first.
 *
 * Observations go to `compareConcurrency` lanes (CompareLane) by their user's partition, so
 * a user's observations are compared in the order they came, one batch at a time, while the
 * lanes compare batches of other users alongside.
 *
 * A failure is logged and the same batch retried with back-off for as long as the process
 * runs: a storage or broker outage costs latency, not events, and never reaches the gateway
 * client. A change nobody is listening to is stored, and that is success here (the POST's
 * "no listener" 500 does not apply). Whatever is left at shutdown, or dropped past the
 * bounds, was not compared: the known names still hold the old values, so the next full view
 * of those servers finds the changes (asked for at once after a live update is dropped).
 */
@Injectable()
export class DetectorOutbox {
  readonly logger = new Logger('DiscordDetector');
  /** Told the server of each live update dropped, for its members to be asked for again. */
  readonly liveDroppedListeners = new Set<(guildId: string) => void>();
  private readonly lanes: CompareLane[];
  private stopped = false;

  constructor(
    readonly nameEvents: NameEventsService,
    readonly knownNames: KnownNamesRepository,
    readonly progress: ShardProgressRepository,
    @Inject(DETECTOR_SETTINGS) readonly settings: DetectorSettings,
    readonly metrics: DetectorMetrics,
  ) {
    const count = settings.compareConcurrency;
    this.lanes = Array.from({ length: count }, (_, lane) => {
      const partitions = [...Array(USER_PARTITIONS).keys()].filter((p) => p % count === lane);
      return new CompareLane(this, partitions);
    });
    metrics.onCollect(() => {
      const { live, reconciling } = this.backlog;
      metrics.detectorBacklog.set({ queue: 'live' }, live);
      metrics.detectorBacklog.set({ queue: 'reconcile' }, reconciling);
    });
  }

  /**
   * Observations waiting or under way, by queue: 0 on both means every observation received
   * has been compared.
   */
  get backlog(): Counts {
    const total = { live: 0, reconciling: 0 };
    for (const { counts } of this.lanes) {
      total.live += counts.live;
      total.reconciling += counts.reconciling;
    }
    return total;
  }

  /**
   * Members seen in live updates: compared first, each user's in the order they arrived.
   * `done` is called once they are all compared and their changes stored (or dropped past
   * the bounds, for the next full view to find), never when shutdown comes first.
   */
  observeLive(observations: readonly MemberObservation[], done = () => {}): void {
    if (this.refuse(observations.length)) return;
    const settle = countdown(observations.length, done);
    for (const [lane, part] of this.byLane(observations)) lane.pushLive(part, settle);
  }

  /**
   * Told the server of each live update dropped past the bounds (MemberListRequester asks for
   * its members again); returns the function that stops telling.
   */
  onLiveDropped(listener: (guildId: string) => void): () => void {
    this.liveDroppedListeners.add(listener);
    return () => this.liveDroppedListeners.delete(listener);
  }

  /** The members of a full view of a server: compared in batches, after live updates. */
  observeFullView(
    observations: readonly MemberObservation[],
    run: ReconciliationRun,
    done = () => {},
  ): void {
    if (this.refuse(observations.length)) return;
    const settle = countdown(observations.length, run.track(done));
    for (const [lane, part] of this.byLane(observations)) lane.pushFullView(part, run, settle);
  }

  /**
   * Resolves once fewer than `limit` full-view members are waiting, each lane below its share
   * (or at shutdown).
   */
  async whenReconcilingBelow(limit: number): Promise<void> {
    if (this.stopped) return;
    const share = Math.ceil(limit / this.lanes.length);
    await Promise.all(this.lanes.map((lane) => lane.whenReconcilingBelow(share)));
  }

  /** Stops retrying; waits briefly for the batches under way; logs what is left uncompared. */
  async stop(): Promise<void> {
    this.stopped = true;
    await withTimeout(Promise.all(this.lanes.map((lane) => lane.stop())), STOP_GRACE_MS).catch(
      () => undefined,
    );
    const { live, reconciling } = this.backlog;
    const left = live + reconciling;
    if (left > 0) {
      this.logger.warn(
        `${left} gateway observation(s) not compared before shutdown: the known names keep ` +
          'their old values, so the next full view of those servers finds any change',
      );
    }
    for (const lane of this.lanes) lane.clear();
  }

  /** The observations by the lane of their user's partition, in the order they came. */
  private byLane(observations: readonly MemberObservation[]) {
    const { lanes } = this;
    return Map.groupBy(observations, (o) => lanes[userPartitionOf(o.userId) % lanes.length]);
  }

  private refuse(count: number): boolean {
    if (!this.stopped || count === 0) return false;
    this.logger.warn(`Ignored ${count} gateway observation(s) during shutdown`);
    return true;
  }
}

/** Calls `done` once called `left` times (at once for none). */
function countdown(left: number, done: () => void): () => void {
  if (left === 0) done();
  return () => {
    if (--left === 0) done();
  };
}
