// Fan-out: N listeners on one instance, events published one at a time (closed loop).
// A short run with a single listener first gives the per-event cost that does not depend
// on listeners (POST, database, Redis), so the per-listener cost can also be shown alone.
// Run against every side: the service, both baselines and nchan.
import { ListenerFleet, MB, Publisher, closedLoopFanout, round3 } from '../lib/harness.mjs';
import { n } from '../lib/report.mjs';

/** The figures of a fan-out; `loopTarget` and `p99Target` are ratios to the baseline. */
function fanoutMetrics({ loopTarget, p99Target }) {
  const target = (ratio) => (ratio ? { target: { op: '<=', ratio } } : {});
  return [
    { key: 'p50Ms', label: 'publish→receive p50', unit: 'ms', better: 'lower' },
    {
      key: 'p99Ms',
      label: 'publish→receive p99',
      unit: 'ms',
      better: 'lower',
      ...target(p99Target),
    },
    {
      key: 'loopUsPerDelivery',
      label: 'event-loop time per delivery',
      unit: 'µs',
      better: 'lower',
      ...target(loopTarget),
    },
    {
      key: 'marginalLoopUsPerListener',
      label: '… of which per listener (minus 1-listener cost)',
      unit: 'µs',
      better: 'lower',
    },
    { key: 'cpuUsPerDelivery', label: 'process CPU per delivery', unit: 'µs', better: 'lower' },
    { key: 'rssPerListenerKB', label: 'RSS per listener', unit: 'KB', better: 'lower' },
    { key: 'deliveriesPerSec', label: 'deliveries/s (closed loop)', unit: '/s', better: 'higher' },
    { key: 'exactlyOnce', label: 'every event delivered exactly once', unit: '', better: 'true' },
  ];
}

function fanout(name, full, quick, targets) {
  return {
    name,
    title: (p) => `Fan-out, ${n(p.listeners)} listeners, ${p.events} events`,
    size: (q) => (q ? quick : full),
    sides: ['service', 'baseline', 'baseline-socket', 'nchan'],
    metrics: fanoutMetrics(targets),
    async run(ctx, target, { listeners, events }) {
      const { instance } = await ctx.server(target);
      const publisher = await Publisher.start(ctx, [instance.origin]);
      const maxMs = ctx.quick ? 20_000 : 120_000;

      const single = await ListenerFleet.start(ctx, 1);
      await single.connect([instance.origin], 1);
      const one = await closedLoopFanout(ctx, {
        fleet: single,
        publisher,
        instances: [instance],
        events: Math.min(events, 50),
        listeners: 1,
        maxMs,
      });
      await single.stop();

      const fleet = await ListenerFleet.start(ctx, listeners);
      const empty = await instance.sample({ gc: true });
      const c = await fleet.connect([instance.origin], listeners);
      if (c.open < listeners) {
        throw new Error(
          `only ${c.open} of ${listeners} listeners connected: ${JSON.stringify(c.failures)}`,
        );
      }
      await ctx.pause(500);
      const held = await instance.sample({ gc: true });
      const result = await closedLoopFanout(ctx, {
        fleet,
        publisher,
        instances: [instance],
        events,
        listeners: c.open,
        maxMs,
      });
      // loopUsPerDelivery × listeners = loop time per event; minus the 1-listener event.
      // (No event loop to measure in nchan: null there.)
      const marginal =
        result.loopUsPerDelivery === null || one.loopUsPerDelivery === null
          ? NaN
          : (result.loopUsPerDelivery * c.open - one.loopUsPerDelivery) / (c.open - 1);
      return {
        connectMs: c.ms,
        rssMB: Math.round((held.rss / MB) * 10) / 10,
        rssPerListenerKB: Math.round(((held.rss - empty.rss) / c.open / 1024) * 100) / 100,
        ...result,
        oneListenerLoopUsPerEvent: one.loopUsPerDelivery,
        oneListenerP50Ms: one.p50Ms,
        marginalLoopUsPerListener: round3(marginal),
      };
    },
  };
}

// Issue 12's targets: event-loop time per delivery ≤ 2× the baseline at 1,000 listeners and
// ≤ 2.5× at 10,000; publish→receive p99 ≤ 2× at 1,000.
export const fanout1k = fanout(
  'fanout-1k',
  { listeners: 1_000, events: 200 },
  { listeners: 100, events: 50 },
  { loopTarget: 2, p99Target: 2 },
);
export const fanout10k = fanout(
  'fanout-10k',
  { listeners: 10_000, events: 200 },
  { listeners: 1_000, events: 50 },
  { loopTarget: 2.5 },
);
