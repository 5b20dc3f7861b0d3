import { rateLimitConfig } from './rate-limit.config.js';
import { RateLimitGuard } from './rate-limit.guard.js';

export const RATE_LIMITED_MESSAGE = 'Too many requests: the publish rate limit is exceeded';

/**
 * PUBLISH_RATE_LIMIT publishes per PUBLISH_RATE_WINDOW_MS per client address (0, the
 * default, turns it off), across all instances; past it, 429 with Retry-After.
 */
export const PublishRateLimitGuard = RateLimitGuard({
  section: rateLimitConfig,
  budget: (config) => ({ ...config, name: 'publish', message: RATE_LIMITED_MESSAGE }),
  key: (request) => request.ip ?? '',
});
