import { CreateNameChangeEvents1763700000000 } from './1763700000000-create-name-change-events.js';
import { CreateKnownNames1763800000000 } from './1763800000000-create-known-names.js';

/** Every migration, oldest first. Listed by hand so the same array serves ts and js builds. */
export const migrations = [CreateNameChangeEvents1763700000000, CreateKnownNames1763800000000];
