import { Index } from 'typeorm';
import { NameChangeEvent } from '../name-events/index.js';

/** The search's expression index on the events table, built by this module's migration. */
export const SEARCH_INDEX = 'name_change_events_search_idx';

// Declared to TypeORM on the events' entity, as never synchronised: TypeORM cannot describe an
// expression index, and `migration:generate` would otherwise offer to drop it every time.
Index(SEARCH_INDEX, { synchronize: false })(NameChangeEvent);
