// Soak (--soak only): 5,000 listeners, 10 events/s for N minutes; RSS drift and
// lost / duplicated / out-of-order events.
import { ListenerFleet, MB, Publisher } from '../lib/harness.mjs';
import { n } from '../lib/report.mjs';

export const soak = {
  name: 'soak',
  title: (p) => `Soak: ${n(p.listeners)} listeners, ${p.ratePerSec} events/s for ${p.minutes} min`,
  size: (q, opts) => ({
    listeners: q ? 500 : 5_000,
    ratePerSec: 10,
    minutes: opts.soakMinutes ?? (q ? 0.5 : 10),
  }),
  metrics: [
    { key: 'events', label: 'events published (answered 200)', unit: '', better: 'higher' },
    { key: 'rssDriftMB', label: 'RSS drift (after GC, end − start)', unit: 'MB', better: 'lower' },
    {
      key: 'rssSlopeMBPerMin',
      label: 'RSS trend over the second half (least squares)',
      unit: 'MB/min',
      better: 'lower',
    },
    { key: 'heapDriftMB', label: 'heap drift (after GC)', unit: 'MB', better: 'lower' },
    { key: 'receiveP99Ms', label: 'publish→receive p99', unit: 'ms', better: 'lower' },
    { key: 'lost', label: 'lost deliveries', unit: '', better: 'lower' },
    { key: 'duplicates', label: 'duplicated / out-of-order deliveries', unit: '', better: 'lower' },
  ],
  async run(ctx, target, { listeners, ratePerSec, minutes }) {
    const { instance } = await ctx.server(target);
    const fleet = await ListenerFleet.start(ctx, listeners);
    const publisher = await Publisher.start(ctx, [instance.origin], 4);
    const c = await fleet.connect([instance.origin], listeners);
    if (c.open < listeners) {
      throw new Error(
        `only ${c.open} of ${listeners} listeners connected: ${JSON.stringify(c.failures)}`,
      );
    }
    await ctx.pause(1_000);
    const start = await instance.sample({ gc: true });
    await fleet.reset();
    const durationMs = Math.round(minutes * 60_000);
    const samples = [];
    let running = true;
    let lastLog = 0;
    const sampler = (async () => {
      while (running) {
        const s = await instance.sample();
        samples.push({ min: (s.at - start.at) / 60_000, rssMB: s.rss / MB });
        if (s.at - lastLog >= 30_000) {
          lastLog = s.at;
          ctx.log(
            `  soak ${target.name}: ${((s.at - start.at) / 1000).toFixed(0)} s, RSS ${(s.rss / MB).toFixed(1)} MB`,
          );
        }
        await ctx.pause(Math.min(10_000, Math.max(1_000, durationMs / 20)));
      }
    })();
    let run;
    try {
      run = await publisher.run({
        concurrency: 4,
        ratePerSec,
        durationMs,
        startSeq: ctx.nextSeq(1_000_000),
      });
    } finally {
      running = false;
      await sampler;
    }
    const s = await fleet.settle(run.ok, 5_000);
    const end = await instance.sample({ gc: true });
    const expected = run.ok * c.open;
    const lat = s.latency.summaryMs();
    return {
      listeners: c.open,
      minutes,
      events: run.ok,
      postStatuses: run.statuses,
      postErrors: run.errors,
      rssStartMB: round1(start.rss / MB),
      rssEndMB: round1(end.rss / MB),
      rssMaxMB: round1(Math.max(...samples.map((x) => x.rssMB), end.rss / MB)),
      rssDriftMB: round1((end.rss - start.rss) / MB),
      // The first half holds the warm-up (the heap growing to its working size); a leak
      // still shows in the second.
      rssSlopeMBPerMin: round1(slope(samples.slice(Math.floor(samples.length / 2)))),
      heapDriftMB: round1((end.heapUsed - start.heapUsed) / MB),
      receiveP50Ms: lat.p50,
      receiveP99Ms: lat.p99,
      expected,
      deliveries: s.unique,
      lost: Math.max(0, expected - s.unique),
      duplicates: s.duplicates + s.outOfOrder,
      closedUnexpectedly: s.closedUnexpectedly,
    };
  },
};

function round1(x) {
  return Number.isFinite(x) ? Math.round(x * 10) / 10 : null;
}

function slope(points) {
  if (points.length < 2) {
    return NaN;
  }
  const n = points.length;
  const mx = points.reduce((s, p) => s + p.min, 0) / n;
  const my = points.reduce((s, p) => s + p.rssMB, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.min - mx) * (p.rssMB - my);
    den += (p.min - mx) ** 2;
  }
  return den === 0 ? NaN : num / den;
}
