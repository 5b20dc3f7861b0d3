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
    this.onCollect(async () => {
      const { status } = (await database.check()).database;
      this.dependencyUp.set({ dependency: 'postgres' }, status === 'up' ? 1 : 0);
    });
    // Redis is a dependency only when it is configured.
    if (bus.enabled) {
      this.onCollect(async () => {
        const { status } = (await bus.check()).redis;
        this.dependencyUp.set({ dependency: 'redis' }, status === 'up' ? 1 : 0);
      });
    }
  }
}
