import { CreateUserOptOuts1767000000000 } from './1767000000000-create-user-opt-outs.js';

/** The privacy module's migrations (listed by hand: the same array serves the ts and js builds). */
export const privacyMigrations = [CreateUserOptOuts1767000000000];
