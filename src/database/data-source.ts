import { DataSource } from 'typeorm';
import { APPLICATION_MODULES } from '../app.module.js';
import { collectOwned } from '../config/owns.decorator.js';
import { postgresOptions } from './postgres-options.js';

/**
 * The TypeORM CLI's entry (`npm run migration:generate|run|revert`), on the built code, with
 * every module's entities and migrations. It needs a real server: set DATABASE_URL (the
 * embedded database is the service's own).
 */
// The CLI runs outside the application, so it reads its one variable itself.
const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL must be set for the TypeORM CLI');

const { entities, migrations } = collectOwned(APPLICATION_MODULES);
export default new DataSource(
  postgresOptions({ url, poolSize: 1, entities: [...entities], migrations: [...migrations] }),
);
