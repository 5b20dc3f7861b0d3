import { Module } from '@nestjs/common';
import { Owns } from '../config/owns.decorator.js';
import { CursorsModule } from '../cursors/index.js';
import { NameEventsModule } from '../name-events/index.js';
import { RateLimitModule } from '../rate-limit/index.js';
import { searchMigrations } from './migrations/index.js';
import { searchConfig } from './search.config.js';
import './search-index.js';
import { SearchController } from './search.controller.js';
import { SearchService } from './search.service.js';

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
  apiSecuritySchemes: [
    {
      name: 'search',
      description:
        "the operator's SEARCH_TOKEN (16 characters or more); ADMIN_TOKEN is accepted too.",
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
