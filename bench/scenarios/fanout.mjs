// Fan-out: N listeners on one instance, events published one at a time: in a closed loop
// (the next once every listener has the last), or paced (open loop, `ratePerSec`).
// A short run with a single listener first gives the per-event cost that does not depend
// on listeners (POST, database, Redis), so the per-listener cost can also be shown alone.
// Run against every side: the service, both baselines and nchan (the paced one also against
// the smallest Nest `@Sse()` route).
import { ListenerFleet, MB, Publisher, closedLoopFanout, round3 } from '../lib/harness.mjs';
import { n } from '../lib/report.mjs';

/** The figures of a closed-loop fan-out. */
function fanoutMetrics() {
  return [
    { key: 'p50Ms', label: 'publish→receive p50', unit: 'ms', better: 'lower' },
    {
      key: 'p99Ms',
      label: 'publish→receive p99',
      unit: 'ms',
      better: 'lower',
    },
    {
      key: 'loopUsPerDelivery',
      label: 'event-loop time per delivery',
      unit: 'µs',
      better: 'lower',
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

function fanout(name, full, quick, metrics = fanoutMetrics(), extraSides = []) {
  return {
    name,
    title: (p) =>
      `Fan-out, ${n(p.listeners)} listeners, ${p.events} events` +
      (p.ratePerSec ? ` at ${p.ratePerSec}/s` : ''),
    size: (q) => (q ? quick : full),
    sides: ['service', 'baseline', 'baseline-socket', ...extraSides, 'nchan'],
    metrics,
    async run(ctx, target, { listeners, events, ratePerSec }) {
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
        ratePerSec,
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

// Closed loops: what an instance can deliver at most, for comparison (no targets: a ratio of
// raw throughput on two shared cores says little about the load the service meets).
export const fanout1k = fanout(
  'fanout-1k',
  { listeners: 1_000, events: 200 },
  { listeners: 100, events: 50 },
);
export const fanout10k = fanout(
  'fanout-10k',
  { listeners: 10_000, events: 200 },
  { listeners: 1_000, events: 50 },
);
// Issue 38's target: at 10,000 listeners and 20 events/s, published at their pace, the
// process CPU per delivery at most twice nchan's. Also against the smallest Nest `@Sse()`
// route (baseline-nest): what the framework's own writer costs at the same load.
export const fanoutPaced = fanout(
  'fanout-paced',
  { listeners: 10_000, events: 200, ratePerSec: 20 },
  { listeners: 1_000, events: 50, ratePerSec: 20 },
  [
    { key: 'eventsPerSec', label: 'events/s published', unit: '/s', better: 'higher' },
    { key: 'p50Ms', label: 'publish→receive p50', unit: 'ms', better: 'lower' },
    { key: 'p99Ms', label: 'publish→receive p99', unit: 'ms', better: 'lower' },
    {
      key: 'cpuUsPerDelivery',
      label: 'process CPU per delivery',
      unit: 'µs',
      better: 'lower',
      target: { op: '<=', ratio: 2, of: 'nchan' },
    },
    { key: 'rssPerListenerKB', label: 'RSS per listener', unit: 'KB', better: 'lower' },
    { key: 'exactlyOnce', label: 'every event delivered exactly once', unit: '', better: 'true' },
  ],
  ['baseline-nest'],
);
