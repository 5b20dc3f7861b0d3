/** What the rate-limit folder offers the others: nothing else of it is theirs to import. */
export { PublishRateLimitGuard, RATE_LIMITED_MESSAGE } from './publish-rate-limit.guard.js';
export { RateLimitGuard } from './rate-limit.guard.js';
export { RateLimitModule } from './rate-limit.module.js';
