import { CreateNameChangeEvents1763700000000 } from './1763700000000-create-name-change-events.js';
import { CreateKnownNames1763800000000 } from './1763800000000-create-known-names.js';
import { IndexNameChangeEventsChangedAt1767000000001 } from './1767000000001-index-name-change-events-changed-at.js';
import { CreateNameEventConsumers1768000000000 } from './1768000000000-create-name-event-consumers.js';
import { SplitKnownNames1769300000000 } from './1769300000000-split-known-names.js';

/** The name-event domain's migrations (listed by hand: the same array serves the ts and js builds). */
export const nameEventsMigrations = [
  CreateNameChangeEvents1763700000000,
  CreateKnownNames1763800000000,
  IndexNameChangeEventsChangedAt1767000000001,
  CreateNameEventConsumers1768000000000,
  SplitKnownNames1769300000000,
];
