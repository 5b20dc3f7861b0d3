import { Injectable } from '@nestjs/common';
import { BusHealthIndicator } from '../bus/index.js';
import { DatabaseHealthIndicator } from '../database/index.js';
import { MetricsService, ModuleMetrics } from '../metrics/index.js';

/** Whether the dependencies answer, at every scrape. */
@Injectable()
export class HealthMetrics extends ModuleMetrics {
  readonly dependencyUp = this.gauge({
    name: 'name_history_dependency_up',
    help: '1 when the dependency answers, 0 when not',
    labelNames: ['dependency'] as const,
  });

  constructor(metrics: MetricsService, database: DatabaseHealthIndicator, bus: BusHealthIndicator) {
    super(metrics);
    // Redis is a dependency only when it is configured.
    const dependencies = { postgres: database, ...(bus.enabled ? { redis: bus } : {}) };
    for (const [dependency, indicator] of Object.entries(dependencies)) {
      this.onCollect(async () => {
        const [{ status }] = Object.values<{ status: string }>(await indicator.check());
        this.dependencyUp.set({ dependency }, status === 'up' ? 1 : 0);
      });
    }
  }
}
