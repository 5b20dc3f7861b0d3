import { describe, expect, it } from '@jest/globals';
import { getHeapSpaceStatistics } from 'node:v8';
import { MetricsService } from '../metrics/metrics.service.js';
import {
  MemoryRelease,
  RELEASE_EVERY_MEMBERS,
  RELEASE_FROM_YOUNG_BYTES,
} from './memory-release.js';

/** A release whose young generation is what the test says, counting the collections. */
class Observed extends MemoryRelease {
  young = RELEASE_FROM_YOUNG_BYTES;
  collections = 0;
  protected override youngGenerationBytes(): number {
    return this.young;
  }
  protected override collect(): void {
    this.collections += 1;
  }
}

async function releasesCounted(metrics: MetricsService): Promise<number> {
  const text = await metrics.registry.metrics();
  const line = text
    .split('\n')
    .find((l) => l.startsWith('name_history_detector_memory_releases_total '));
  return Number(line?.split(' ')[1]);
}

describe('MemoryRelease', () => {
  it('collects once 10,000 members were compared since the last release, and counts it', async () => {
    const metrics = new MetricsService();
    const release = new Observed(metrics);
    release.reconciled(RELEASE_EVERY_MEMBERS - 1);
    release.idle();
    expect(release.collections).toBe(0);

    release.reconciled(1);
    release.idle();
    expect(release.collections).toBe(1);
    expect(await releasesCounted(metrics)).toBe(1);

    // Counted from the release on.
    release.reconciled(RELEASE_EVERY_MEMBERS - 1);
    release.idle();
    expect(release.collections).toBe(1);
    release.reconciled(1);
    release.idle();
    expect(release.collections).toBe(2);
    expect(await releasesCounted(metrics)).toBe(2);
  });

  it('waits while the young generation holds too little to give back, keeping the count', () => {
    const release = new Observed(new MetricsService());
    release.young = RELEASE_FROM_YOUNG_BYTES - 1;
    release.reconciled(RELEASE_EVERY_MEMBERS);
    release.idle();
    expect(release.collections).toBe(0);

    release.young = RELEASE_FROM_YOUNG_BYTES;
    release.idle();
    expect(release.collections).toBe(1);
  });

  it("shrinks V8's young generation without giving the global scope a gc function", () => {
    const release = new MemoryRelease(new MetricsService());
    const young = () =>
      getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.physical_space_size;
    // Survivors of several young collections make V8 grow the young generation.
    let kept: object[] = [];
    for (let i = 0; i < 2_000_000; i++) {
      kept.push({ i, name: `member ${i}` });
      if (kept.length > 200_000) kept = kept.slice(100_000);
    }
    kept.length = 0;
    const grown = young();
    expect(grown).toBeGreaterThanOrEqual(RELEASE_FROM_YOUNG_BYTES);

    release.reconciled(RELEASE_EVERY_MEMBERS);
    release.idle();
    expect(young()).toBeLessThan(grown / 4);
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });
});
