import { Injectable } from '@nestjs/common';
import { NameEventConsumer, type NameEventHandler } from '../name-events/index.js';
import { WEBHOOKS_CONSUMER } from './webhook-sender.js';
import { WebhookSendersService } from './webhook-senders.service.js';

/**
 * The webhooks' door into the event log: its position is how far the senders read the event
 * log (every event up to it is committed, in id order: NameEventLogRepository.findHandled),
 * and each batch wakes them.
 */
@NameEventConsumer({ name: WEBHOOKS_CONSUMER, batchSize: 500, gatherMs: 200 })
@Injectable()
export class WebhookEventsConsumer implements NameEventHandler {
  constructor(private readonly senders: WebhookSendersService) {}

  /** Nothing to write: the position, moved with the batch, is what the senders read up to. */
  async handle(): Promise<void> {}

  committed(): void {
    this.senders.wakeAll();
  }
}
