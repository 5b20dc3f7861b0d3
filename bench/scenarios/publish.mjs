// Publish rate: concurrent POST loops against one instance with listeners connected, the
// ordering guarantee on; every listener must get every event once, in id order.
import { ListenerFleet, Publisher } from '../lib/harness.mjs';
import { Histogram } from '../lib/histogram.mjs';
import { n } from '../lib/report.mjs';

export const publish = {
  name: 'publish',
  // A short scenario whose figures swing with the machine: the median of three rounds.
  rounds: 3,
  title: (p) =>
    `Publish rate: ${n(p.listeners)} listeners, ${p.publishers} concurrent publishers, ${p.durationMs / 1000} s`,
  size: (q) =>
    q
      ? { listeners: 20, publishers: 10, durationMs: 2_000 }
      : { listeners: 100, publishers: 10, durationMs: 15_000 },
  metrics: [
    {
      key: 'eventsPerSec',
      label: 'events/s',
      unit: '/s',
      better: 'higher',
      // Issue 38: 300 events/s on one instance with 100 listeners, each in order, once.
      target: { op: '>=', value: 300 },
    },
    { key: 'postP50Ms', label: 'POST p50', unit: 'ms', better: 'lower' },
    { key: 'postP99Ms', label: 'POST p99', unit: 'ms', better: 'lower' },
    { key: 'receiveP99Ms', label: 'publish→receive p99', unit: 'ms', better: 'lower' },
    { key: 'inOrderExactlyOnce', label: 'every event once, in id order', unit: '', better: 'true' },
  ],
  async run(ctx, target, { listeners, publishers, durationMs }) {
    const { instance } = await ctx.server(target);
    const fleet = await ListenerFleet.start(ctx, listeners);
    const publisher = await Publisher.start(ctx, [instance.origin], publishers);
    const c = await fleet.connect([instance.origin], listeners);
    if (c.open < listeners) {
      throw new Error(
        `only ${c.open} of ${listeners} listeners connected: ${JSON.stringify(c.failures)}`,
      );
    }
    await ctx.pause(300);
    const warmSeq = ctx.nextSeq(1_000_000);
    const warm = await publisher.run({
      concurrency: publishers,
      durationMs: ctx.quick ? 500 : 2_000,
      startSeq: warmSeq,
      maxEvents: 1_000_000,
    });
    await fleet.settle(warm.ok);
    await fleet.reset();
    const before = await instance.sample();
    const run = await publisher.run({
      concurrency: publishers,
      durationMs,
      startSeq: ctx.nextSeq(10_000_000),
      maxEvents: 10_000_000,
    });
    const after = await instance.sample();
    const s = await fleet.settle(run.ok);
    const expected = run.ok * c.open;
    const post = Histogram.fromJSON(run.latency).summaryMs();
    const recv = s.latency.summaryMs();
    return {
      listeners: c.open,
      publishers,
      posted: run.sent,
      events: run.ok,
      postStatuses: run.statuses,
      postErrors: run.errors,
      eventsPerSec: Math.round(run.perSec),
      postP50Ms: post.p50,
      postP99Ms: post.p99,
      receiveP50Ms: recv.p50,
      receiveP99Ms: recv.p99,
      deliveries: s.unique,
      expected,
      lost: Math.max(0, expected - s.unique),
      duplicates: s.duplicates,
      outOfOrder: s.outOfOrder,
      inOrderExactlyOnce: s.unique === expected && s.duplicates === 0 && s.outOfOrder === 0,
      cpuUsPerEvent: Math.round(
        ((after.cpu.process - before.cpu.process) * 1000) / Math.max(1, run.ok),
      ),
    };
  },
};
