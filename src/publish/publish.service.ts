import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import { BusUnavailableError, NameEventBus } from '../bus/name-event-bus.js';
import { pgPool, StorageUnavailableError } from '../database/pg-pool.js';
import {
  NameChangeEventRepository,
  PUBLISH_LOCK_KEY,
  type NewNameEvent,
  type StoredNameEvent,
} from '../history/name-change-event.repository.js';
import { MetricsService } from '../metrics/metrics.service.js';
import type { SqlSession } from '../name-events/known-names.repository.js';

/**
 * The advisory lock under which the detector compares with its known names ("pgdetect" in
 * ASCII): one comparison at a time, on every instance.
 */
const DETECT_LOCK_KEY = '8099552841756402548';

/** Publishes that wait while a batch is out go out together, up to this many. */
const MAX_BATCH = 200;

export type NameChange = NewNameEvent;

export interface PublishOutcome {
  event: StoredNameEvent;
  /** False when the same four fields were stored already (a repeat). */
  created: boolean;
  /** How many instances with listeners received the event: 0 means nobody is listening. */
  receivers: number;
}

interface Pending {
  change: NameChange;
  startedAt: number;
  resolve(outcome: PublishOutcome): void;
  reject(error: unknown): void;
}

/**
 * The one path by which an event enters the system (POST and the detector): store it,
 * then broadcast it. Store-and-broadcast runs under a Postgres advisory lock held across
 * the insert and the broker's acknowledgement, so events reach the broker, and so every
 * listener on every instance, in the order of their ids: a reconnect with Last-Event-ID
 * then leaves no gap. Within an instance one batch is out at a time; the publishes that
 * arrive meanwhile go out together in the next one (one insert, one round of PUBLISH),
 * which keeps the lock's cost per event small under load.
 */
@Injectable()
export class PublishService {
  private waiting: Pending[] = [];
  private draining = false;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly events: NameChangeEventRepository,
    private readonly bus: NameEventBus,
    private readonly metrics: MetricsService,
  ) {}

  /**
   * Rejects with StorageUnavailableError (nothing stored, nothing sent) or
   * BusUnavailableError (stored, not sent: a retry sends it with the same id).
   */
  publish(change: NameChange): Promise<PublishOutcome> {
    const stopTimer = this.metrics.publishDuration.startTimer();
    const outcome = new Promise<PublishOutcome>((resolve, reject) => {
      this.waiting.push({ change, startedAt: Date.now(), resolve, reject });
    });
    if (!this.draining) void this.drain();
    return outcome.then(
      (result) => {
        stopTimer();
        if (result.created) this.metrics.eventsStored.inc();
        if (result.receivers > 0) this.metrics.eventsBroadcast.inc();
        else this.metrics.eventsUndelivered.inc({ reason: 'no_listeners' });
        return result;
      },
      (error: unknown) => {
        stopTimer();
        if (error instanceof BusUnavailableError) {
          this.metrics.eventsUndelivered.inc({ reason: 'bus_unavailable' });
        }
        throw error;
      },
    );
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0, MAX_BATCH);
        try {
          const outcomes = await this.storeAndBroadcast(batch);
          batch.forEach((pending, i) => pending.resolve(outcomes[i]));
        } catch (error) {
          for (const pending of batch) pending.reject(error);
        }
      }
    } finally {
      this.draining = false;
    }
  }

  private async storeAndBroadcast(batch: Pending[]): Promise<PublishOutcome[]> {
    const client = await this.connect();
    let broken: Error | undefined;
    try {
      await this.storage(() => client.query('SELECT pg_advisory_lock($1)', [PUBLISH_LOCK_KEY]));
      try {
        const stored = await this.storage(() =>
          this.events.insertOrFindMany(
            batch.map((pending) => pending.change),
            client,
          ),
        );
        const receivers = await this.bus.publish(
          stored.map((s) => s.event),
          batch[0].startedAt,
        );
        return stored.map((s, i) => ({ ...s, receivers: receivers[i] }));
      } finally {
        await client
          .query('SELECT pg_advisory_unlock($1)', [PUBLISH_LOCK_KEY])
          .catch((error: Error) => {
            broken = error;
          });
      }
    } catch (error) {
      if (error instanceof StorageUnavailableError) broken ??= error;
      throw error;
    } finally {
      // A session that may still hold the lock must not go back to the pool: destroy it.
      client.release(broken);
    }
  }

  // ---- The detector's way in (an extension point; the path above is untouched by it) ----

  /**
   * Publishes what `detect` finds, with what it writes, atomically. `detect` runs on the
   * storing session inside a transaction that holds the detect lock (one comparison at a time
   * across instances: a lease takeover may overlap two detectors): it reads and writes the
   * state it compares with (the detector's known names) and returns the changes it found.
   * Only when there are some does it take the publish lock, as a POST does; they are inserted
   * in the same transaction, which then commits, and broadcast like any publish, in id order,
   * still under the lock. So a change and the state it moves forward commit together or not at
   * all, and a comparison that finds nothing (most of a reconciliation) never holds up a POST.
   * Resolves with one outcome per change, in order (none when `detect` found none). Rejects
   * with StorageUnavailableError (rolled back: nothing stored) or BusUnavailableError
   * (committed, not sent: publishing the same changes again sends them with their ids), or
   * with what `detect` threw (rolled back).
   */
  async publishDetected(
    detect: (session: SqlSession) => Promise<NameChange[]>,
  ): Promise<PublishOutcome[]> {
    const startedAt = Date.now();
    const stopTimer = this.metrics.publishDuration.startTimer();
    const client = await this.connect();
    const session: SqlSession = {
      query: async <T>(sql: string, parameters: unknown[]) =>
        (await this.storage(() => client.query(sql, parameters))).rows as T[],
    };
    let broken: Error | undefined;
    let locked = false;
    let stored: { event: StoredNameEvent; created: boolean }[] = [];
    try {
      await this.storage(() => client.query('BEGIN'));
      try {
        await this.storage(() =>
          client.query('SELECT pg_advisory_xact_lock($1)', [DETECT_LOCK_KEY]),
        );
        const changes = await detect(session);
        if (changes.length > 0) {
          // Taken after the detect lock, never before it: a POST holds only this one.
          locked = true;
          await this.storage(() => client.query('SELECT pg_advisory_lock($1)', [PUBLISH_LOCK_KEY]));
          stored = await this.storage(() => this.events.insertOrFindMany(changes, client));
        }
        await this.storage(() => client.query('COMMIT'));
      } catch (error) {
        await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
        throw error;
      }
      if (stored.length === 0) return [];
      const receivers = await this.bus.publish(
        stored.map((s) => s.event),
        startedAt,
      );
      const outcomes = stored.map((s, i) => ({ ...s, receivers: receivers[i] }));
      stopTimer();
      for (const outcome of outcomes) {
        if (outcome.created) this.metrics.eventsStored.inc();
        if (outcome.receivers > 0) this.metrics.eventsBroadcast.inc();
        else this.metrics.eventsUndelivered.inc({ reason: 'no_listeners' });
      }
      return outcomes;
    } catch (error) {
      if (error instanceof StorageUnavailableError) broken ??= error;
      if (error instanceof BusUnavailableError) {
        for (const { created } of stored) {
          if (created) this.metrics.eventsStored.inc();
          this.metrics.eventsUndelivered.inc({ reason: 'bus_unavailable' });
        }
      }
      throw error;
    } finally {
      if (locked) {
        await client
          .query('SELECT pg_advisory_unlock($1)', [PUBLISH_LOCK_KEY])
          .catch((error: Error) => {
            broken ??= error;
          });
      }
      // A session that may still hold the lock must not go back to the pool: destroy it.
      client.release(broken);
    }
  }

  private async connect(): Promise<PoolClient> {
    try {
      return await pgPool(this.dataSource).connect();
    } catch (error) {
      throw new StorageUnavailableError((error as Error).message);
    }
  }

  /** Runs a statement; any failure of it means the database is unavailable. */
  private async storage<T>(statement: () => Promise<T>): Promise<T> {
    try {
      return await statement();
    } catch (error) {
      throw new StorageUnavailableError((error as Error).message);
    }
  }
}
