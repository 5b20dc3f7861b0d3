import { CreateWebhooks1769000000000 } from './1769000000000-create-webhooks.js';
import { NotifyWebhookQueueChanges1769200000000 } from './1769200000000-notify-webhook-queue-changes.js';
import { EndpointPositions1769400000000 } from './1769400000000-endpoint-positions.js';
import { DropWebhookQueueNotifications1769700000000 } from './1769700000000-drop-webhook-queue-notifications.js';

/** The webhooks module's migrations (listed by hand: the same array serves the ts and js builds). */
export const webhooksMigrations = [
  CreateWebhooks1769000000000,
  NotifyWebhookQueueChanges1769200000000,
  EndpointPositions1769400000000,
  DropWebhookQueueNotifications1769700000000,
];
