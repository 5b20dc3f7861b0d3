import { CreateNameChangeEvents1763700000000 } from './1763700000000-create-name-change-events.js';

/** Every migration, oldest first. Listed by hand so the same array serves ts and js builds. */
export const migrations = [CreateNameChangeEvents1763700000000];
