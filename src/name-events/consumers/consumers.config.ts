import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { defineConfig, Variable } from '../../config/config-section.js';
import { ToInteger } from '../../config/transforms.js';

export class ConsumerVariables {
  @Variable(
    "how often a consumer of the event log (webhooks…) looks for events stored by another instance (this instance's own wake it at once)",
  )
  @IsOptional()
  @ToInteger()
  @IsInt()
  @Min(50)
  @Max(60_000)
  CONSUMER_POLL_MS: number = 500;

  @Variable("a consumer's lease in Redis: how soon another instance takes over a dead one's")
  @IsOptional()
  @ToInteger()
  @IsInt()
  @Min(1_000)
  @Max(600_000)
  CONSUMER_LEASE_MS: number = 15_000;
}

/** The consumers of the event log: how they look for new events, and hand over. */
export const consumersConfig = defineConfig({
  namespace: 'consumers',
  description: 'The consumers of the event log (webhooks, and any module that declares one).',
  variables: ConsumerVariables,
  build: (env) => ({ pollMs: env.CONSUMER_POLL_MS, leaseMs: env.CONSUMER_LEASE_MS }),
});
