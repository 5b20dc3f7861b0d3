import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { ClientBase } from 'pg';
import type { AppDataSource } from './app-data-source.js';
import { StorageUnavailableError, storageUnavailable } from './database.types.js';

/** Work on one connection of its own, across transactions. */
@Injectable()
export class DatabaseSessionsService {
  constructor(@InjectDataSource() private readonly dataSource: AppDataSource) {}

  /**
   * Runs `work` on one connection of its own: every statement and transaction inside it, from
   * any repository, runs on that connection (what a session-level advisory lock needs, held
   * across a commit). Nested calls join it. A session whose statement failed is closed rather
   * than pooled again: the statement may yet run on the server (a lock granted after a
   * timeout).
   */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.dataSource.sessions.getStore()) return work();
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.connect().catch((error: unknown) => {
        throw storageUnavailable(error);
      });
      return await this.dataSource.sessions.run(runner, () =>
        work().catch(async (error: unknown) => {
          if (error instanceof StorageUnavailableError) await this.close();
          throw error;
        }),
      );
    } finally {
      await runner.release();
    }
  }

  /**
   * Closes the connection of the session under way rather than pooling it again: whatever
   * it holds (a session lock) goes with it.
   */
  async close(): Promise<void> {
    const client = (await this.dataSource.sessions.getStore()?.connect()) as
      (ClientBase & { end(): Promise<void> }) | undefined;
    await client?.end().catch(() => undefined);
  }
}
