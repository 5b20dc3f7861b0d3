// Two instances sharing Redis: the same listeners and events on one instance, then split
// over two (half each, events posted to both in turn).
import { MachineCpu } from '../lib/foreign-cpu.mjs';
import { Instance, ListenerFleet, Publisher, closedLoopFanout } from '../lib/harness.mjs';
import { n } from '../lib/report.mjs';

export const twoInstances = {
  name: 'two-instances',
  title: (p) =>
    `Two instances sharing Redis vs one (${n(p.listeners)} listeners, ${p.events} events)`,
  size: (q) => (q ? { listeners: 400, events: 30 } : { listeners: 4_000, events: 200 }),
  metrics: [
    { key: 'p99Ms', label: 'two instances: publish→receive p99', unit: 'ms', better: 'lower' },
    { key: 'deliveriesPerSec', label: 'two instances: deliveries/s', unit: '/s', better: 'higher' },
    { key: 'oneP99Ms', label: 'one instance: publish→receive p99', unit: 'ms', better: 'lower' },
    {
      key: 'oneDeliveriesPerSec',
      label: 'one instance: deliveries/s',
      unit: '/s',
      better: 'higher',
    },
    {
      key: 'scaling',
      label: 'deliveries/s, two ÷ one',
      unit: '×',
      better: 'higher',
    },
    { key: 'exactlyOnce', label: 'exactly once, both runs', unit: '', better: 'true' },
    // What bounds the scaling: a machine already busy with one instance has no core left
    // for a second one (BENCHMARKS.md, "What each figure means").
    {
      key: 'oneMachineBusyPct',
      label: 'one instance: machine CPU busy (all cores)',
      unit: '%',
      better: 'lower',
    },
    {
      key: 'oneInstanceCores',
      label: 'one instance: its own CPU, in cores',
      unit: '',
      better: 'lower',
    },
    {
      key: 'machineBusyPct',
      label: 'two instances: machine CPU busy (all cores)',
      unit: '%',
      better: 'lower',
    },
  ],
  async run(ctx, target, { listeners, events }) {
    const { database, instance: a } = await ctx.server(target);
    const phase = async (instances) => {
      const fleet = await ListenerFleet.start(ctx, listeners);
      const publisher = await Publisher.start(
        ctx,
        instances.map((i) => i.origin),
      );
      try {
        const c = await fleet.connect(
          instances.map((i) => i.origin),
          listeners,
        );
        if (c.open < listeners) {
          throw new Error(
            `only ${c.open} of ${listeners} listeners connected: ${JSON.stringify(c.failures)}`,
          );
        }
        await ctx.pause(500);
        const machine = new MachineCpu().start();
        const result = await closedLoopFanout(ctx, {
          fleet,
          publisher,
          instances,
          events,
          listeners: c.open,
          maxMs: ctx.quick ? 20_000 : 120_000,
        });
        return { ...result, machineBusyPct: machine.stop() };
      } finally {
        await fleet.stop();
        await publisher.stop();
      }
    };
    const one = await phase([a]);
    const b = await Instance.start(ctx, target, {
      database,
      label: `${target.name}-B`,
      redisPrefix: a.redisPrefix,
    });
    const two = await phase([a, b]);
    return {
      listeners,
      events: two.events,
      p50Ms: two.p50Ms,
      p99Ms: two.p99Ms,
      deliveriesPerSec: two.deliveriesPerSec,
      cpuUsPerDelivery: two.cpuUsPerDelivery,
      oneP50Ms: one.p50Ms,
      oneP99Ms: one.p99Ms,
      oneDeliveriesPerSec: one.deliveriesPerSec,
      oneCpuUsPerDelivery: one.cpuUsPerDelivery,
      scaling: Math.round((two.deliveriesPerSec / one.deliveriesPerSec) * 100) / 100,
      exactlyOnce: one.exactlyOnce && two.exactlyOnce,
      machineBusyPct: two.machineBusyPct,
      oneMachineBusyPct: one.machineBusyPct,
      // CPU per delivery × deliveries per second: how many cores the one instance kept busy.
      oneInstanceCores:
        Math.round(((one.cpuUsPerDelivery * one.deliveriesPerSec) / 1e6) * 100) / 100,
      lost: one.lost + two.lost,
      duplicates: one.duplicates + two.duplicates,
      outOfOrder: one.outOfOrder + two.outOfOrder,
    };
  },
};
