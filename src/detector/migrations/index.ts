import { CreateDetectorShardProgress1769500000000 } from './1769500000000-create-detector-shard-progress.js';

/** The detector's migrations (listed by hand: the same array serves the ts and js builds). */
export const detectorMigrations = [CreateDetectorShardProgress1769500000000];
