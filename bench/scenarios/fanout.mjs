// Fan-out: N listeners on one instance, events published one at a time (closed loop).
// A short run with a single listener first gives the per-event cost that does not depend
// on listeners (POST, database, Redis), so the per-listener cost can also be shown alone.
import { ListenerFleet, Publisher, closedLoopFanout, round3 } from '../lib/harness.mjs';
import { n } from '../lib/report.mjs';

export const FANOUT_METRICS = [
  { key: 'p50Ms', label: 'publish→receive p50', unit: 'ms', better: 'lower' },
  {
    key: 'p99Ms',
    label: 'publish→receive p99',
    unit: 'ms',
    better: 'lower',
    target: { op: '<=', ratio: 2 },
  },
  {
    key: 'loopUsPerDelivery',
    label: 'event-loop time per broadcast per listener',
    unit: 'µs',
    better: 'lower',
    target: { op: '<=', ratio: 2 },
  },
  {
    key: 'marginalLoopUsPerListener',
    label: '… of which per listener (minus 1-listener cost)',
    unit: 'µs',
    better: 'lower',
  },
  { key: 'cpuUsPerDelivery', label: 'process CPU per delivery', unit: 'µs', better: 'lower' },
  { key: 'deliveriesPerSec', label: 'deliveries/s (closed loop)', unit: '/s', better: 'higher' },
  { key: 'exactlyOnce', label: 'every event delivered exactly once', unit: '', better: 'true' },
];

function fanout(name, full, quick) {
  return {
    name,
    title: (p) => `Fan-out, ${n(p.listeners)} listeners, ${p.events} events`,
    size: (q) => (q ? quick : full),
    metrics: FANOUT_METRICS,
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
      const c = await fleet.connect([instance.origin], listeners);
      if (c.open < listeners) {
        throw new Error(
          `only ${c.open} of ${listeners} listeners connected: ${JSON.stringify(c.failures)}`,
        );
      }
      await ctx.pause(500);
      const result = await closedLoopFanout(ctx, {
        fleet,
        publisher,
        instances: [instance],
        events,
        listeners: c.open,
        maxMs,
      });
      // loopUsPerDelivery × listeners = loop time per event; minus the 1-listener event.
      const marginal = (result.loopUsPerDelivery * c.open - one.loopUsPerDelivery) / (c.open - 1);
      return {
        connectMs: c.ms,
        ...result,
        oneListenerLoopUsPerEvent: one.loopUsPerDelivery,
        oneListenerP50Ms: one.p50Ms,
        marginalLoopUsPerListener: round3(marginal),
      };
    },
  };
}

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
