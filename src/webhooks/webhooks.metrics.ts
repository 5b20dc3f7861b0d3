import { Injectable } from '@nestjs/common';
import { ModuleMetrics } from '../metrics/index.js';

/** Each endpoint's deliveries, and what it has still to get. */
@Injectable()
export class WebhooksMetrics extends ModuleMetrics {
  readonly attempts = this.counter({
    name: 'name_history_webhook_deliveries_total',
    help: 'Delivery attempts to a webhook endpoint from this instance, by outcome (delivered: 2xx; rejected: another status; gone: 410; timeout; error: no answer; refused: the target failed the address check)',
    labelNames: ['endpoint', 'outcome'] as const,
  });

  readonly pending = this.gauge({
    name: 'name_history_webhook_pending_events',
    help: 'Events matching a webhook endpoint, stored and not yet delivered to it',
    labelNames: ['endpoint'] as const,
  });
}
