import { defineConfig, Variable } from '../config/config-section.js';
import { IsIntegerBetween } from '../config/transforms.js';

export class RetentionVariables {
  @Variable('history entries whose `changedAt` is older are deleted by a periodic job', {
    default: '`0` (keep forever)',
  })
  @IsIntegerBetween(0, 36_500)
  RETENTION_DAYS: number = 0;

  @Variable('how often the retention job runs (and once at start-up)')
  @IsIntegerBetween(100, 86_400_000)
  RETENTION_INTERVAL_MS: number = 3_600_000;

  @Variable('entries the retention job deletes per statement')
  @IsIntegerBetween(1, 100_000)
  RETENTION_BATCH_SIZE: number = 1000;
}

/** Retention: how long entries are kept, and how the job deletes the older ones. */
export const retentionConfig = defineConfig({
  namespace: 'retention',
  description: 'Retention: how long entries are kept, and how the job deletes the older ones.',
  variables: RetentionVariables,
  build: (env) => ({
    /** 0: keep forever. */
    days: env.RETENTION_DAYS,
    intervalMs: env.RETENTION_INTERVAL_MS,
    batchSize: env.RETENTION_BATCH_SIZE,
  }),
});
