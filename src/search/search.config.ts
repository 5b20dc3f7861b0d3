import { IsOptional, IsString, MinLength } from 'class-validator';
import { defineConfig, Variable } from '../config/config-section.js';
import { IsIntegerBetween } from '../config/transforms.js';

export class SearchVariables {
  @Variable(
    '16+ characters; turns on the name search (`GET /api/prevnames`), which requires `Authorization: Bearer <token>` (ADMIN_TOKEN is accepted too)',
    { default: 'unset: search off unless ADMIN_TOKEN is set', secret: true },
  )
  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'must be at least 16 characters long' })
  SEARCH_TOKEN?: string;

  @Variable(
    'searches per window per token (SEARCH_TOKEN and ADMIN_TOKEN counted apart), across all instances; past it, 429 with `Retry-After`; `0`: off',
  )
  @IsIntegerBetween(0, 1_000_000)
  SEARCH_RATE_LIMIT: number = 120;

  @Variable('the search rate-limit window')
  @IsIntegerBetween(1000, 3_600_000)
  SEARCH_RATE_WINDOW_MS: number = 60_000;
}

/** The name search: on when SEARCH_TOKEN (or ADMIN_TOKEN) is set; its rate limit. */
export const searchConfig = defineConfig({
  namespace: 'search',
  description: 'The name search: on when SEARCH_TOKEN (or ADMIN_TOKEN) is set; its rate limit.',
  variables: SearchVariables,
  build: (env) => ({
    token: env.SEARCH_TOKEN,
    rateLimit: env.SEARCH_RATE_LIMIT,
    rateWindowMs: env.SEARCH_RATE_WINDOW_MS,
  }),
});
