// Idle memory: RSS and V8 heap per connected listener (after a full GC), at N listeners;
// nchan's RSS beside them.
import { ListenerFleet, MB } from '../lib/harness.mjs';
import { n } from '../lib/report.mjs';

export const idleMemory = {
  name: 'idle-memory',
  title: (p) => `Idle memory per listener, ${n(p.listeners)} listeners`,
  size: (q) => ({ listeners: q ? 1_000 : 10_000 }),
  sides: ['service', 'baseline', 'nchan'],
  metrics: [
    {
      key: 'rssPerListenerKB',
      label: 'RSS per listener',
      unit: 'KB',
      better: 'lower',
      // Issue 38: at most 44 KB per idle listener (what the build before held), whatever the baseline holds.
      target: { op: '<=', value: 44 },
    },
    { key: 'heapPerListenerKB', label: 'V8 heap per listener', unit: 'KB', better: 'lower' },
    { key: 'rssIdleMB', label: 'RSS with no listener', unit: 'MB', better: 'lower' },
    { key: 'rssMB', label: 'RSS with the listeners', unit: 'MB', better: 'lower' },
  ],
  async run(ctx, target, { listeners }) {
    const { instance } = await ctx.server(target);
    const fleet = await ListenerFleet.start(ctx, listeners);
    // One listener first, then none: whatever a first listener sets up once is in the baseline.
    const warm = await ListenerFleet.start(ctx, 1);
    await warm.connect([instance.origin], 1);
    await warm.stop();
    await ctx.pause(300);
    const before = await instance.sample({ gc: true });
    const c = await fleet.connect([instance.origin], listeners);
    if (c.open < listeners) {
      throw new Error(
        `only ${c.open} of ${listeners} listeners connected: ${JSON.stringify(c.failures)}`,
      );
    }
    await ctx.pause(ctx.quick ? 500 : 2_000);
    const after = await instance.sample({ gc: true });
    const kb = (bytes) => Math.round((bytes / c.open / 1024) * 100) / 100;
    return {
      listeners: c.open,
      connectMs: c.ms,
      rssIdleMB: Math.round((before.rss / MB) * 10) / 10,
      rssMB: Math.round((after.rss / MB) * 10) / 10,
      rssPerListenerKB: kb(after.rss - before.rss),
      heapPerListenerKB: kb(after.heapUsed - before.heapUsed),
      externalPerListenerKB: kb(after.external - before.external),
    };
  },
};
