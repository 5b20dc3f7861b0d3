import { CreateWebhooks1769000000000 } from './1769000000000-create-webhooks.js';

/** The webhooks module's migrations (listed by hand: the same array serves the ts and js builds). */
export const webhooksMigrations = [CreateWebhooks1769000000000];
