import { Injectable } from '@nestjs/common';
import { ModuleMetrics } from '../metrics/index.js';

/** What the event log stores, broadcasts and replays, and how its consumers keep up. */
@Injectable()
export class NameEventsMetrics extends ModuleMetrics {
  readonly eventsStored = this.counter({
    name: 'name_history_events_stored_total',
    help: 'Events newly stored by this instance (repeats excluded)',
  });

  readonly eventsBroadcast = this.counter({
    name: 'name_history_events_broadcast_total',
    help: 'Events this instance published to at least one instance with listeners',
  });

  readonly eventsUndelivered = this.counter({
    name: 'name_history_events_undelivered_total',
    help: 'Events this instance stored but could not deliver (no listener anywhere, or the bus down)',
    labelNames: ['reason'] as const,
  });

  readonly eventsRefused = this.counter({
    name: 'name_history_events_refused_total',
    help: 'Events this instance refused to store (the user opted out)',
    labelNames: ['reason'] as const,
  });

  readonly eventsReplayed = this.counter({
    name: 'name_history_events_replayed_total',
    help: 'Stored events sent to reconnecting listeners (Last-Event-ID replay)',
  });

  readonly publishDuration = this.histogram({
    name: 'name_history_publish_duration_seconds',
    help: 'Time to store and broadcast one event (the POST handler and the detector)',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  });

  readonly consumerEvents = this.counter({
    name: 'name_history_consumer_events_total',
    help: 'Events a consumer of the event log handled on this instance',
    labelNames: ['consumer'] as const,
  });

  readonly consumerFailures = this.counter({
    name: 'name_history_consumer_failures_total',
    help: 'Batches a consumer of the event log failed on this instance (each is tried again)',
    labelNames: ['consumer'] as const,
  });

  readonly consumerLagEvents = this.gauge({
    name: 'name_history_consumer_lag_events',
    help: 'Events stored after the position of a consumer of the event log (counted up to a million)',
    labelNames: ['consumer'] as const,
  });

  readonly consumerLagSeconds = this.gauge({
    name: 'name_history_consumer_lag_seconds',
    help: 'How long the oldest event a consumer of the event log has not handled has been stored',
    labelNames: ['consumer'] as const,
  });
}
