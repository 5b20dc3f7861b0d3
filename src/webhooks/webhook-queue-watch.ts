import { Injectable } from '@nestjs/common';
import {
  PostgresNotifications,
  type NotificationWatch,
} from '../database/postgres-notifications.service.js';
import type { SharedStamp } from '../common/shared-stamp.js';

/** The channel the webhooks' triggers notify (see the migration that creates them). */
export const QUEUE_CHANGED_CHANNEL = 'webhook_queue_changed';

/**
 * Tells the senders when events they read may have been taken away by anyone, on any
 * instance: an event erased (erasure, opt-out, retention) or an endpoint deleted. Postgres notifies
 * QUEUE_CHANGED_CHANNEL when such a statement commits, and this instance listens
 * (PostgresNotifications). A sender may trust what it read while `stamp()` is unchanged;
 * while nothing listens (the embedded database, which takes one connection; a lost
 * connection) `stamp()` is undefined and a sender checks before each attempt instead.
 */
@Injectable()
export class WebhookQueueWatch {
  private readonly watch: NotificationWatch;

  constructor(notifications: PostgresNotifications) {
    this.watch = notifications.watch(QUEUE_CHANGED_CHANNEL);
  }

  /** Changes whenever read events may have gone; undefined while nothing listens. */
  stamp(): number | undefined {
    return this.watch.stamp();
  }

  /** The stamp in memory shared with the delivery thread. */
  get shared(): SharedStamp {
    return this.watch.shared;
  }
}
