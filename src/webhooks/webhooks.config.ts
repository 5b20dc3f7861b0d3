import { IsBoolean, IsOptional } from 'class-validator';
import { defineConfig, Variable } from '../config/config-section.js';
import { IsIntegerBetween, ToBoolean } from '../config/transforms.js';

export class WebhooksVariables {
  @Variable(
    '`true` lets webhook endpoints point at loopback and private addresses (a name that does not resolve stays refused)',
  )
  @IsOptional()
  @ToBoolean()
  @IsBoolean({ message: 'WEBHOOK_ALLOW_PRIVATE_TARGETS must be true or false' })
  WEBHOOK_ALLOW_PRIVATE_TARGETS: boolean = false;

  @Variable(
    "a webhook endpoint's sender lease in Redis: how soon another instance takes over a dead one's deliveries",
  )
  @IsIntegerBetween(1_000, 600_000)
  WEBHOOK_LEASE_MS: number = 15_000;

  @Variable(
    'how often an idle sender looks for events read by another instance, and instances for endpoints created elsewhere',
  )
  @IsIntegerBetween(50, 60_000)
  WEBHOOK_POLL_MS: number = 500;
}

/** Outbound webhooks: which targets are allowed, and how the senders hand over. */
export const webhooksConfig = defineConfig({
  namespace: 'webhooks',
  description: 'Outbound webhooks: which targets are allowed, and how the senders hand over.',
  variables: WebhooksVariables,
  build: (env) => ({
    allowPrivateTargets: env.WEBHOOK_ALLOW_PRIVATE_TARGETS,
    leaseMs: env.WEBHOOK_LEASE_MS,
    pollMs: env.WEBHOOK_POLL_MS,
  }),
});
