import { Injectable } from '@nestjs/common';
import {
  NameEventConsumer,
  type NameEventHandler,
} from '../name-events/consumers/name-event-consumer.decorator.js';
import type { StoredNameEvent } from '../name-events/name-event.types.js';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository.js';
import { WebhookSenders } from './webhook-senders.service.js';

/**
 * The webhooks' door into the event log: each stored event is queued for every endpoint it
 * matches, in the consumer's transaction (so once), and the senders act on the queue.
 */
@NameEventConsumer({ name: 'webhooks', batchSize: 500, gatherMs: 200 })
@Injectable()
export class WebhookEventsConsumer implements NameEventHandler {
  constructor(
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly senders: WebhookSenders,
  ) {}

  handle(events: readonly StoredNameEvent[]): Promise<void> {
    return this.deliveries.enqueue(events);
  }

  committed(): void {
    this.senders.wakeAll();
  }
}
