import { Logger } from '@nestjs/common';
import { callerOf, type Caller } from '../auth/index.js';
import { RateLimitGuard } from '../rate-limit/index.js';
import { searchConfig } from './search.config.js';

/** Whose token a search came with: what the log and the rate limit know of the caller. */
export type SearchIdentity = Extract<Caller, 'search-token' | 'admin-token'>;

export const RATE_LIMITED_MESSAGE = 'Too many requests: the search rate limit is exceeded';

const logger = new Logger('Search');

/**
 * Counts each search against its token's own budget (SEARCH_RATE_LIMIT), after
 * `@RequireToken('search')` has found which token it came with.
 */
export const SearchRateLimitGuard = RateLimitGuard({
  section: searchConfig,
  budget: (config) => ({
    name: 'search',
    limit: config.rateLimit,
    windowMs: config.rateWindowMs,
    message: RATE_LIMITED_MESSAGE,
  }),
  key: (request) => callerOf(request) as SearchIdentity,
  refused: (identity) =>
    logger.warn(`Name search by the ${identity} refused (429): past its rate limit`),
});
