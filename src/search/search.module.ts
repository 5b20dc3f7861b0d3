import { Module } from '@nestjs/common';
import { Index } from 'typeorm';
import { Owns } from '../config/owns.decorator.js';
import { CursorsModule } from '../cursors/index.js';
import { NameChangeEvent, NameEventsModule } from '../name-events/index.js';
import { RateLimitModule } from '../rate-limit/index.js';
import { searchMigrations } from './migrations/index.js';
import { searchConfig } from './search.config.js';
import { SearchController } from './search.controller.js';
import { SearchService } from './search.service.js';

// The search's expression index on the events table, built by this module's migration,
// declared to TypeORM on the events' entity as never synchronised: TypeORM cannot describe an
// expression index, and `migration:generate` would otherwise offer to drop it every time.
Index('name_change_events_search_idx', { synchronize: false })(NameChangeEvent);

/**
 * GET /prevnames: who had a given name (off unless SEARCH_TOKEN or ADMIN_TOKEN is set), read
 * through the domain's NameSearchRepository (over the expression index of this module's
 * migration, applied before the query moved), so what the domain deletes (erasure, opt-out,
 * retention) is gone from the search at once.
 * Offers nothing to other modules.
 */
@Owns({
  apiTags: [
    {
      name: 'search',
      description:
        'Who had a given name (moderation; off unless SEARCH_TOKEN or ADMIN_TOKEN is set)',
    },
  ],
  config: [searchConfig],
  migrations: searchMigrations,
})
@Module({
  imports: [CursorsModule, NameEventsModule, RateLimitModule],
  controllers: [SearchController],
  providers: [SearchService],
})
export class SearchModule {}
