import { Injectable, Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { MetricsService } from '../metrics/metrics.service.js';

/** Members compared since the last release below which another is not worth its pause. */
export const RELEASE_EVERY_MEMBERS = 10_000;
/** Resident young generation below which there is too little to give back. */
export const RELEASE_FROM_YOUNG_BYTES = 16 * 1024 * 1024;
const MB = 1024 * 1024;

type Gc = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * Gives back to the system the memory a reconciliation burst took, once the detector has
 * compared every full view it was given.
 *
 * A burst of full views (a start, a takeover, a server back from an outage) keeps tens of
 * thousands of members waiting in memory for a second or so. V8 grows its young generation
 * for them (to 128 MB) and keeps the pages of what it promoted pooled once they are free.
 * After 200,000 members the process stayed about 200 MB larger than it needed, for as long as
 * it ran: V8's memory reducer starts only after a full collection, and a burst of short-lived
 * garbage causes none. The collection V8 does under memory pressure (its "last resort")
 * shrinks the young generation and frees the pool (120–140 ms after 200,000 members). It runs
 * once the young generation holds 16 MB or more and 10,000 members or more were compared since
 * the last release, so that a trickle of small servers does not pay the pause again and again.
 */
@Injectable()
export class MemoryRelease {
  private readonly logger = new Logger('DiscordDetector');
  private readonly releases;
  private comparedSinceLast = 0;
  private gc?: Gc;

  constructor(metrics: MetricsService) {
    this.releases = metrics.counter({
      name: 'name_history_detector_memory_releases_total',
      help: 'Collections that gave the memory of a reconciliation burst back to the system, once every full view was compared',
    });
  }

  /** A full view of `members` members has been compared. */
  reconciled(members: number): void {
    this.comparedSinceLast += members;
  }

  /** No full view is being compared: releases the burst's memory if it is worth it. */
  idle(): void {
    if (this.comparedSinceLast < RELEASE_EVERY_MEMBERS) return;
    if (this.youngGenerationBytes() < RELEASE_FROM_YOUNG_BYTES) return;
    this.comparedSinceLast = 0;
    const before = process.memoryUsage.rss();
    const startedAt = performance.now();
    this.collect();
    const after = process.memoryUsage.rss();
    this.releases.inc();
    this.logger.log(
      `Every full view compared: gave ${Math.round((before - after) / MB)} MB back to the ` +
        `system in ${Math.round(performance.now() - startedAt)} ms (resident ` +
        `${Math.round(before / MB)} MB → ${Math.round(after / MB)} MB)`,
    );
  }

  /** The young generation's resident size. */
  protected youngGenerationBytes(): number {
    const space = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    return space?.physical_space_size ?? 0;
  }

  /** A full collection that also shrinks the young generation and frees V8's page pool. */
  protected collect(): void {
    this.gc ??= v8Gc();
    this.gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  }
}

/**
 * V8's `gc` function, taken from a context of its own so that the service's global scope
 * does not get one (a process started with --expose-gc has it already).
 */
function v8Gc(): Gc {
  const exposed = (globalThis as { gc?: Gc }).gc;
  if (exposed) return exposed;
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as Gc;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}
