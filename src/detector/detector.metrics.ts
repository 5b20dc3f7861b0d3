import { Injectable } from '@nestjs/common';
import { ModuleMetrics } from '../metrics/index.js';

/** The detector's backlog, comparisons, shards and sessions. */
@Injectable()
export class DetectorMetrics extends ModuleMetrics {
  readonly detectorBacklog = this.gauge({
    name: 'name_history_detector_backlog',
    help: 'Discord gateway observations waiting to be compared with the last known names: live updates, and members of servers being reconciled',
    labelNames: ['queue'] as const,
  });

  readonly detectorMembersCompared = this.counter({
    name: 'name_history_detector_members_compared_total',
    help: 'Gateway observations of members compared with the last known names: from live updates, or from full views of a server (reconciliation)',
    labelNames: ['source'] as const,
  });

  readonly detectorChanges = this.counter({
    name: 'name_history_detector_changes_total',
    help: 'Name changes the detector found and published: in a live update, or by reconciliation (what changed while it was not watching)',
    labelNames: ['source'] as const,
  });

  readonly detectorReconciliations = this.counter({
    name: 'name_history_detector_reconciliations_total',
    help: 'Full views of a server (its GUILD_CREATE, then its member chunks) compared to the last member',
  });

  readonly detectorReconciliationDuration = this.histogram({
    name: 'name_history_detector_reconciliation_duration_seconds',
    help: "Time from a server's GUILD_CREATE (or first member chunk) to the comparison of its last member",
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
  });

  readonly detectorPublishFailures = this.counter({
    name: 'name_history_detector_publish_failures_total',
    help: 'Attempts to compare, store or broadcast a batch of gateway observations that failed (the batch is retried with back-off)',
  });

  readonly detectorShardsHeld = this.gauge({
    name: 'name_history_detector_shards_held',
    help: 'Gateway shards this instance runs now (each under a lease of its own)',
  });

  readonly detectorShardCount = this.gauge({
    name: 'name_history_detector_shard_count',
    help: 'Gateway shards in all, shared by the instances that run the detector',
  });

  readonly detectorLiveInstances = this.gauge({
    name: 'name_history_detector_live_instances',
    help: 'Instances running the detector, as announced in Redis',
  });

  readonly detectorSessionStarts = this.counter({
    name: 'name_history_detector_session_starts_total',
    help: "Gateway connections opened by this instance: a new session (identify, one of the day's session starts) or a resumed one (resume)",
    labelNames: ['kind'] as const,
  });

  readonly detectorHandovers = this.counter({
    name: 'name_history_detector_shard_handovers_total',
    help: 'Shards this instance let go of: to even out the shards over the instances (rebalance), at shutdown (stop), because its lease was lost (lost), or because it could not be started (failed)',
    labelNames: ['reason'] as const,
  });
}
