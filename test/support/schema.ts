import { APPLICATION_MODULES } from '../../src/app.module.js';
import { collectOwned } from '../../src/config/owns.decorator.js';
import { runMigrationsApart } from '../../src/database/migrate.js';
import { postgresOptions } from '../../src/database/postgres-options.js';
import type { TestDatabase } from './database.js';

/**
 * Migrates `db` as an earlier version left it, for an upgrade test: every migration of the
 * application's modules but those of `later` (which the service then runs at its start).
 */
export async function migrateAllBut(db: TestDatabase, later: readonly unknown[]): Promise<void> {
  const { entities, migrations } = collectOwned(APPLICATION_MODULES);
  await runMigrationsApart(
    postgresOptions({
      url: db.url,
      entities: [...entities],
      migrations: migrations.filter((migration) => !later.includes(migration)),
    }),
  );
}
