import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { InjectDataSource } from '@nestjs/typeorm';
import { withTimeout } from '../common/with-timeout.js';
import { AppDataSource } from './app-data-source.js';

const PING_TIMEOUT_MS = 2_000;

/** Up when the database answers and the schema is migrated. */
@Injectable()
export class DatabaseHealthIndicator {
  constructor(
    @InjectDataSource() private readonly dataSource: AppDataSource,
    private readonly health: HealthIndicatorService,
  ) {}

  async check() {
    const indicator = this.health.check('database');
    if (!this.dataSource.isReady) return indicator.down({ message: 'not connected' });
    try {
      await withTimeout(this.dataSource.query('SELECT 1'), PING_TIMEOUT_MS);
      return indicator.up();
    } catch (error) {
      return indicator.down({ message: (error as Error).message });
    }
  }
}
