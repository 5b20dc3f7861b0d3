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
 * own metrics in its folder, in a `<feature>.metrics.ts` provider that extends ModuleMetrics.
 * Gauges that reflect state (listeners, dependencies up) are read at scrape time through
 * the collectors that ModuleMetrics' `onCollect` registers.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  /** Run before every scrape (ModuleMetrics.onCollect adds them). */
  readonly collectors: (() => unknown)[] = [];

  constructor() {
    collectDefaultMetrics({ register: this.registry });
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
    return new Counter<L>({ ...config, registers: [this.metrics.registry] });
  }

  protected gauge<L extends string = string>(config: Omit<GaugeConfiguration<L>, 'registers'>) {
    return new Gauge<L>({ ...config, registers: [this.metrics.registry] });
  }

  protected histogram<L extends string = string>(
    config: Omit<HistogramConfiguration<L>, 'registers'>,
  ) {
    return new Histogram<L>({ ...config, registers: [this.metrics.registry] });
  }

  /** Runs `collect` before every scrape: for gauges that mirror state kept elsewhere. */
  onCollect(collect: () => unknown): void {
    this.metrics.collectors.push(collect);
  }
}
