import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { AppDataSource } from './app-data-source.js';

/** Whether the database answers and the schema is migrated (readiness, and its metric). */
@Injectable()
export class DatabaseHealthIndicator {
  constructor(@InjectDataSource() private readonly dataSource: AppDataSource) {}

  /** Resolves when the database answers with the schema migrated; rejects otherwise. */
  async ping(): Promise<void> {
    if (!this.dataSource.isReady) throw new Error('not connected');
    await this.dataSource.query('SELECT 1');
  }
}
