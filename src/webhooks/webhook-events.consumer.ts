import { Injectable } from '@nestjs/common';
import {
  NameEventConsumer,
  type NameEventHandler,
} from '../name-events/consumers/name-event-consumer.decorator.js';
import type { StoredNameEvent } from '../name-events/name-event.types.js';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository.js';
import { WebhookSenders } from './webhook-senders.service.js';

/**
 * The webhooks' door into the event log: the consumer's position, kept where the senders
 * read it, is how far they read the event table (every event up to it is committed, in id
 * order), and each batch wakes them.
 */
@NameEventConsumer({ name: 'webhooks', batchSize: 500, gatherMs: 200 })
@Injectable()
export class WebhookEventsConsumer implements NameEventHandler {
  constructor(
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly senders: WebhookSenders,
  ) {}

  async handle(events: readonly StoredNameEvent[]): Promise<void> {
    if (events.length > 0) await this.deliveries.readUpTo(events[events.length - 1].id);
  }

  committed(): void {
    this.senders.wakeAll();
  }
}
