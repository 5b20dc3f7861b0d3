import { IndexNameChangeEventsSearch1769100000000 } from './1769100000000-index-name-change-events-search.js';

/** The name search's migrations (listed by hand: the same array serves the ts and js builds). */
export const searchMigrations = [IndexNameChangeEventsSearch1769100000000];
