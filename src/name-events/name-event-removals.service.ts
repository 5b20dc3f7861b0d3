import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { randomUUID } from 'node:crypto';
import { PostgresNotificationsService } from '../database/index.js';
import type { NameDomainEvents } from './name-event.types.js';

/** The domain's channel: every instance listens, and hears the others' removals. */
export const REMOVALS_CHANNEL = 'name_events_removed';

/**
 * The domain's events, emitted on this instance (`emit`), and its removals carried across
 * instances: a deletion notifies REMOVALS_CHANNEL in its own unit of work (`announce`), and
 * every other instance, listening (PostgresNotificationsService), emits `events.removed` for it.
 * Listening lost, and listening again, are each `events.removed` for anyone: what was deleted
 * meanwhile is unknown.
 */
@Injectable()
export class NameEventRemovalsService {
  /** Tells this instance's notifications from the others'. */
  private readonly instance = randomUUID();

  constructor(
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly emitter: EventEmitter2,
    private readonly notifications: PostgresNotificationsService,
  ) {
    notifications.watch(REMOVALS_CHANNEL, {
      notified: (payload) => this.heard(payload),
      listeningChanged: () => this.emit('events.removed', { userId: null }),
    });
  }

  /**
   * Whether every removal, on any instance, comes to this one as `events.removed`: always
   * with the embedded database (one instance), else while it listens.
   */
  get heardEverywhere(): boolean {
    return this.notifications.hearsAll;
  }

  /** In the deleting unit of work: the other instances hear it once it commits. */
  async announce(userId: string | null): Promise<void> {
    const payload = JSON.stringify({ instance: this.instance, userId });
    await this.txHost.tx.query('SELECT pg_notify($1, $2)', [REMOVALS_CHANNEL, payload]);
  }

  /** A domain event, on this instance, to its `@OnNameEvent` handlers. */
  emit<K extends keyof NameDomainEvents>(name: K, event: NameDomainEvents[K]): void {
    this.emitter.emit(name, event);
  }

  private heard(payload: string): void {
    let notice: { instance?: string; userId?: string | null } = {};
    try {
      notice = JSON.parse(payload) as typeof notice;
    } catch {
      // Not one of ours: taken as anyone's removal.
    }
    if (notice.instance === this.instance) return;
    this.emit('events.removed', { userId: notice.userId ?? null });
  }
}
