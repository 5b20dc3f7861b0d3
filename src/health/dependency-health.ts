import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { InjectDataSource } from '@nestjs/typeorm';
import { NameEventBus } from '../bus/index.js';
import { withTimeout } from '../common/with-timeout.js';
import type { AppDataSource } from '../database/index.js';
import { MetricsService, ModuleMetrics } from '../metrics/index.js';

const PING_TIMEOUT_MS = 2_000;

/**
 * Whether the dependencies answer: the database, and Redis when it is configured (only then
 * is it a dependency). Readiness runs `checks`; every scrape sets the gauge.
 */
@Injectable()
export class DependencyHealth extends ModuleMetrics {
  readonly dependencyUp = this.gauge({
    name: 'name_history_dependency_up',
    help: '1 when the dependency answers, 0 when not',
    labelNames: ['dependency'] as const,
  });

  /** Terminus's checks: `database`, then `redis`. */
  readonly checks: (() => Promise<HealthIndicatorResult>)[] = [];

  constructor(
    metrics: MetricsService,
    private readonly health: HealthIndicatorService,
    @InjectDataSource() database: AppDataSource,
    bus: NameEventBus,
  ) {
    super(metrics);
    // The check's name in the answer, the dependency's in the metric, and how to ask it.
    const dependencies: (readonly [string, string, () => Promise<void>])[] = [
      ['database', 'postgres', () => pingDatabase(database)],
      ...(bus.kind === 'redis' ? [['redis', 'redis', () => bus.ping()] as const] : []),
    ];
    for (const [key, dependency, ping] of dependencies) {
      const check = () => this.check(key, ping);
      this.checks.push(check);
      this.onCollect(async () => {
        const [{ status }] = Object.values<{ status: string }>(await check());
        this.dependencyUp.set({ dependency }, status === 'up' ? 1 : 0);
      });
    }
  }

  private async check(key: string, ping: () => Promise<void>): Promise<HealthIndicatorResult> {
    const indicator = this.health.check(key);
    try {
      await withTimeout(ping(), PING_TIMEOUT_MS);
      return indicator.up();
    } catch (error) {
      return indicator.down({ message: (error as Error).message });
    }
  }
}

/** Resolves when the database answers with the schema migrated; rejects otherwise. */
async function pingDatabase(database: AppDataSource): Promise<void> {
  if (!database.isReady) throw new Error('not connected');
  await database.query('SELECT 1');
}
