/** What the database folder offers the others: nothing else of it is theirs to import. */
export type { AppDataSource } from './app-data-source.js';
export { DatabaseModule } from './database.module.js';
export { StorageUnavailableError, textArray } from './database.types.js';
export { PostgresNotificationsService } from './postgres-notifications.service.js';
