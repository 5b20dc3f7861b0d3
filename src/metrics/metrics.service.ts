import { Injectable } from '@nestjs/common';
import {
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  Registry,
  type CounterConfiguration,
  type GaugeConfiguration,
  type HistogramConfiguration,
} from 'prom-client';

/**
 * The service's Prometheus registry (one per application, so several apps in one process, as
 * in the tests, do not share counters), and /api/metrics's text. Each module declares its
 * own metrics in its folder, in a `<feature>.metrics.ts` provider that extends ModuleMetrics
 * (privacy.metrics.ts). The fields below are those not moved to their module yet.
 * Gauges that reflect state (listeners, dependencies up) are read at scrape time through
 * the collectors registered with `onCollect`.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly listeners = new Gauge({
    name: 'name_history_sse_listeners',
    help: 'SSE listeners connected to this instance',
    registers: [this.registry],
  });

  readonly eventsStored = new Counter({
    name: 'name_history_events_stored_total',
    help: 'Events newly stored by this instance (repeats excluded)',
    registers: [this.registry],
  });

  readonly eventsBroadcast = new Counter({
    name: 'name_history_events_broadcast_total',
    help: 'Events this instance published to at least one instance with listeners',
    registers: [this.registry],
  });

  readonly eventsUndelivered = new Counter({
    name: 'name_history_events_undelivered_total',
    help: 'Events this instance stored but could not deliver (no listener anywhere, or the bus down)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly eventsRefused = new Counter({
    name: 'name_history_events_refused_total',
    help: 'Events this instance refused to store (the user opted out)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly eventsReplayed = new Counter({
    name: 'name_history_events_replayed_total',
    help: 'Stored events sent to reconnecting listeners (Last-Event-ID replay)',
    registers: [this.registry],
  });

  readonly slowListenersCut = new Counter({
    name: 'name_history_slow_listeners_disconnected_total',
    help: 'Listeners disconnected because they stopped reading',
    registers: [this.registry],
  });

  readonly publishDuration = new Histogram({
    name: 'name_history_publish_duration_seconds',
    help: 'Time to store and broadcast one event (the POST handler and the detector)',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });

  readonly dependencyUp = new Gauge({
    name: 'name_history_dependency_up',
    help: '1 when the dependency answers, 0 when not',
    labelNames: ['dependency'] as const,
    registers: [this.registry],
  });

  readonly detectorBacklog = new Gauge({
    name: 'name_history_detector_backlog',
    help: 'Discord gateway observations waiting to be compared with the last known names: live updates, and members of servers being reconciled',
    labelNames: ['queue'] as const,
    registers: [this.registry],
  });

  readonly detectorMembersCompared = new Counter({
    name: 'name_history_detector_members_compared_total',
    help: 'Gateway observations of members compared with the last known names: from live updates, or from full views of a server (reconciliation)',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });

  readonly detectorChanges = new Counter({
    name: 'name_history_detector_changes_total',
    help: 'Name changes the detector found and published: in a live update, or by reconciliation (what changed while it was not watching)',
    labelNames: ['source'] as const,
    registers: [this.registry],
  });

  readonly detectorReconciliations = new Counter({
    name: 'name_history_detector_reconciliations_total',
    help: 'Full views of a server (its GUILD_CREATE, then its member chunks) compared to the last member',
    registers: [this.registry],
  });

  readonly detectorReconciliationDuration = new Histogram({
    name: 'name_history_detector_reconciliation_duration_seconds',
    help: "Time from a server's GUILD_CREATE (or first member chunk) to the comparison of its last member",
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });

  readonly detectorPublishFailures = new Counter({
    name: 'name_history_detector_publish_failures_total',
    help: 'Attempts to compare, store or broadcast a batch of gateway observations that failed (the batch is retried with back-off)',
    registers: [this.registry],
  });

  readonly detectorShardsHeld = new Gauge({
    name: 'name_history_detector_shards_held',
    help: 'Gateway shards this instance runs now (each under a lease of its own)',
    registers: [this.registry],
  });

  readonly detectorShardCount = new Gauge({
    name: 'name_history_detector_shard_count',
    help: 'Gateway shards in all, shared by the instances that run the detector',
    registers: [this.registry],
  });

  readonly detectorLiveInstances = new Gauge({
    name: 'name_history_detector_live_instances',
    help: 'Instances running the detector, as announced in Redis',
    registers: [this.registry],
  });

  readonly detectorSessionStarts = new Counter({
    name: 'name_history_detector_session_starts_total',
    help: "Gateway connections opened by this instance: a new session (identify, one of the day's session starts) or a resumed one (resume)",
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly detectorHandovers = new Counter({
    name: 'name_history_detector_shard_handovers_total',
    help: 'Shards this instance let go of: to even out the shards over the instances (rebalance), at shutdown (stop), because its lease was lost (lost), or because it could not be started (failed)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  private readonly collectors: (() => unknown)[] = [];

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** A counter of a module's own, in this registry (define it in the module's folder). */
  counter<L extends string = string>(config: Omit<CounterConfiguration<L>, 'registers'>) {
    return new Counter<L>({ ...config, registers: [this.registry] });
  }

  /** A gauge of a module's own, in this registry. */
  gauge<L extends string = string>(config: Omit<GaugeConfiguration<L>, 'registers'>) {
    return new Gauge<L>({ ...config, registers: [this.registry] });
  }

  /** A histogram of a module's own, in this registry. */
  histogram<L extends string = string>(config: Omit<HistogramConfiguration<L>, 'registers'>) {
    return new Histogram<L>({ ...config, registers: [this.registry] });
  }

  /** Runs `collect` before every scrape: for gauges that mirror state kept elsewhere. */
  onCollect(collect: () => unknown): void {
    this.collectors.push(collect);
  }

  async metrics(): Promise<string> {
    // A collector that throws is one rejection among the others, not a failed scrape.
    await Promise.allSettled(
      this.collectors.map((collect) => new Promise((resolve) => resolve(collect()))),
    );
    return this.registry.metrics();
  }
}

/**
 * A module's metrics, in the application's registry: extend it in `<feature>.metrics.ts`
 * with one field per metric (`readonly runs = this.counter({...})`), list the class in the
 * module's providers, and inject it where the metrics are recorded.
 */
@Injectable()
export abstract class ModuleMetrics {
  constructor(private readonly metrics: MetricsService) {}

  protected counter<L extends string = string>(config: Omit<CounterConfiguration<L>, 'registers'>) {
    return this.metrics.counter(config);
  }

  protected gauge<L extends string = string>(config: Omit<GaugeConfiguration<L>, 'registers'>) {
    return this.metrics.gauge(config);
  }

  protected histogram<L extends string = string>(
    config: Omit<HistogramConfiguration<L>, 'registers'>,
  ) {
    return this.metrics.histogram(config);
  }

  /** Runs `collect` before every scrape: for gauges that mirror state kept elsewhere. */
  onCollect(collect: () => unknown): void {
    this.metrics.onCollect(collect);
  }
}
