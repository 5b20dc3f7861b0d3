import { CreateCursorKeys1769600000000 } from './1769600000000-create-cursor-keys.js';

/** The cursors' migrations (listed by hand: the same array serves the ts and js builds). */
export const cursorsMigrations = [CreateCursorKeys1769600000000];
