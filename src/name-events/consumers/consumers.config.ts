import { defineConfig, Variable } from '../../config/config-section.js';
import { IsIntegerBetween } from '../../config/transforms.js';

export class ConsumerVariables {
  @Variable(
    "how often a consumer of the event log (webhooks…) looks for events stored by another instance (this instance's own wake it at once)",
  )
  @IsIntegerBetween(50, 60_000)
  CONSUMER_POLL_MS: number = 500;

  @Variable("a consumer's lease in Redis: how soon another instance takes over a dead one's")
  @IsIntegerBetween(1_000, 600_000)
  CONSUMER_LEASE_MS: number = 15_000;
}

/** The consumers of the event log: how they look for new events, and hand over. */
export const consumersConfig = defineConfig({
  namespace: 'consumers',
  description: 'The consumers of the event log (webhooks, and any module that declares one).',
  variables: ConsumerVariables,
  build: (env) => ({ pollMs: env.CONSUMER_POLL_MS, leaseMs: env.CONSUMER_LEASE_MS }),
});
