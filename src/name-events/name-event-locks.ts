import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { AppDataSource } from '../database/index.js';
import { userPartitionOf } from './name-event.types.js';

/**
 * The key of the Postgres advisory lock every publish holds from its insert until the broker
 * has acknowledged it: any fixed number, the same in every instance ("pgpublsh" in ASCII).
 */
export const PUBLISH_LOCK_KEY = '8099296189474205800';

/**
 * The first key of the partition locks ("pgcp" in ASCII), the second being the partition
 * (USER_PARTITIONS): a comparison holds those of the users it compares, and what removes a
 * user's data holds that user's, so neither overlaps another of the same user on any
 * instance. Taken in increasing order, before the publish lock.
 */
export const PARTITION_LOCK_CLASS = 1885823856;

/**
 * The name-event domain's ordering protocol, as locks: what runs under them runs on one
 * session (AppDataSource.runSession), and every repository's statement and transaction inside
 * joins it. Events are stored and broadcast under the publish lock, one publish at a time
 * across all instances, so that ids reach the broker, and every consumer of the table, in
 * increasing order.
 */
@Injectable()
export class NameEventLocks {
  constructor(
    @InjectDataSource() private readonly dataSource: AppDataSource,
    private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>,
  ) {}

  /**
   * Runs `work` on one session while it holds the publish lock (a session lock: it outlives
   * the commits inside). A session whose unlock failed is closed rather than pooled again.
   */
  underPublishLock<T>(work: () => Promise<T>): Promise<T> {
    return this.withPublishLock(async (lockPublish) => {
      await lockPublish();
      return work();
    });
  }

  /**
   * Runs `work` in one transaction that holds the user's partition lock, then the publish
   * lock (the order the detector takes them in): for what removes a user's data, so that no
   * publish and no comparison of that user is under way meanwhile, and each is wholly before
   * or after it.
   */
  underUserLocks<T>(userId: string, work: () => Promise<T>): Promise<T> {
    return this.withPublishLock((lockPublish) =>
      this.txHost.withTransaction(async () => {
        await this.lockPartitions([userPartitionOf(userId)]);
        await lockPublish();
        return work();
      }),
    );
  }

  /**
   * The detector's way: `detect` runs in one transaction that holds the locks of
   * `partitions`, the partitions of the users it compares, and returns what to store; only
   * when there is something is the publish lock taken (after the others, never before: a
   * POST holds only the publish lock) and `store` called, in the same transaction. After the
   * commit, `broadcast` runs on what was stored, the publish lock still held, so it goes out
   * in id order like any publish. Resolves with `broadcast`'s result, or undefined when
   * nothing was found; a failure before the commit rolls everything back.
   */
  detectThenPublish<C, S, R>(
    partitions: readonly number[],
    detect: () => Promise<C[]>,
    store: (changes: C[]) => Promise<S[]>,
    broadcast: (stored: S[]) => Promise<R>,
  ): Promise<R | undefined> {
    return this.withPublishLock(async (lockPublish) => {
      const stored = await this.txHost.withTransaction(async () => {
        await this.lockPartitions(partitions);
        const changes = await detect();
        if (changes.length === 0) return [];
        await lockPublish();
        return store(changes);
      });
      return stored.length === 0 ? undefined : await broadcast(stored);
    });
  }

  /**
   * Runs `work` on one session, given the way to take the publish lock there; once `work`
   * is done, the lock is released if it took it (at most once).
   */
  private withPublishLock<T>(work: (lockPublish: () => Promise<void>) => Promise<T>): Promise<T> {
    return this.dataSource.runSession(async () => {
      let locked = false;
      try {
        return await work(async () => {
          await this.txHost.tx.query('SELECT pg_advisory_lock($1)', [PUBLISH_LOCK_KEY]);
          locked = true;
        });
      } finally {
        if (locked) await this.unlockPublish();
      }
    });
  }

  /** Until the transaction ends; one lock after the other, in increasing order, as everywhere. */
  private async lockPartitions(partitions: readonly number[]): Promise<void> {
    await this.txHost.tx.query('SELECT pg_advisory_xact_lock($1, p) FROM unnest($2::int[]) p', [
      PARTITION_LOCK_CLASS,
      [...new Set(partitions)].sort((a, b) => a - b),
    ]);
  }

  private async unlockPublish(): Promise<void> {
    await this.txHost.tx
      .query('SELECT pg_advisory_unlock($1)', [PUBLISH_LOCK_KEY])
      .catch(() => this.dataSource.closeSession());
  }
}
