import { defineConfig, Variable } from '../config/config-section.js';
import { IsIntegerBetween } from '../config/transforms.js';

export class HistoryVariables {
  @Variable('reads of a whole history longer than 1,000 entries at once, per instance')
  @IsIntegerBetween(1, 1_000)
  HISTORY_LONG_READS: number = 2;

  @Variable(
    'reads of a long history waiting their turn, per instance; past it, 503 with `Retry-After`',
  )
  @IsIntegerBetween(0, 100_000)
  HISTORY_LONG_READS_QUEUE: number = 32;
}

/** Whole-history reads: how many long ones run at once, and how many may wait. */
export const historyConfig = defineConfig({
  namespace: 'history',
  description: 'Whole-history reads: how many long ones run at once, and how many may wait.',
  variables: HistoryVariables,
  build: (env) => ({
    longReads: env.HISTORY_LONG_READS,
    longReadsQueue: env.HISTORY_LONG_READS_QUEUE,
  }),
});
