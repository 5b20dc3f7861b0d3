import { defineConfig, Variable } from '../config/config-section.js';
import { IsIntegerBetween } from '../config/transforms.js';

export class RateLimitVariables {
  @Variable(
    'publishes per window per client address, counted across all instances; past it, 429 with `Retry-After`',
    { default: '`0` (off)' },
  )
  @IsIntegerBetween(0, 1_000_000)
  PUBLISH_RATE_LIMIT: number = 0;

  @Variable('the rate-limit window')
  @IsIntegerBetween(1000, 3_600_000)
  PUBLISH_RATE_WINDOW_MS: number = 60_000;
}

/** The publish rate limit (0: off). */
export const rateLimitConfig = defineConfig({
  namespace: 'rateLimit',
  description: 'The publish rate limit (0: off).',
  variables: RateLimitVariables,
  build: (env) => ({
    limit: env.PUBLISH_RATE_LIMIT,
    windowMs: env.PUBLISH_RATE_WINDOW_MS,
  }),
});
