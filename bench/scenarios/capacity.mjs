// Capacity: as many idle listeners as asked (40,000) or as the server's file-descriptor
// limit allows, keep-alives flowing, then one event to all of them.
import { ListenerFleet, MB, Publisher, closedLoopFanout } from '../lib/harness.mjs';
import { n } from '../lib/report.mjs';

/** Descriptors the server keeps for itself (database pool, Redis, stdio, epoll, …). */
const FD_RESERVE = 300;

export const capacity = {
  name: 'capacity',
  title: (p) =>
    `Capacity: ${n(p.listeners)} idle listeners asked on one instance, one event to all`,
  size: (q) =>
    q ? { listeners: 2_000, keepAliveMs: 1_000 } : { listeners: 40_000, keepAliveMs: 5_000 },
  metrics: [
    { key: 'listeners', label: 'listeners connected', unit: '', better: 'higher' },
    { key: 'rssMB', label: 'RSS with all listeners', unit: 'MB', better: 'lower' },
    { key: 'rssPerListenerKB', label: 'RSS per listener', unit: 'KB', better: 'lower' },
    { key: 'deliverAllMs', label: 'one event to all listeners', unit: 'ms', better: 'lower' },
    { key: 'keepAliveToAll', label: 'keep-alive reached every listener', unit: '', better: 'true' },
    { key: 'exactlyOnce', label: 'event delivered exactly once to all', unit: '', better: 'true' },
  ],
  async run(ctx, target, { listeners: requested, keepAliveMs }) {
    const { instance } = await ctx.server(target, {
      env: { SSE_KEEPALIVE_MS: String(keepAliveMs) },
    });
    const nofile = instance.nofile();
    const listeners = Math.min(
      requested,
      Number.isFinite(nofile) ? nofile - FD_RESERVE : requested,
    );
    const fleet = await ListenerFleet.start(ctx, listeners);
    const publisher = await Publisher.start(ctx, [instance.origin]);
    const idle = await instance.sample({ gc: true });
    const c = await fleet.connect([instance.origin], listeners, { concurrency: 400 });
    if (c.open < listeners) {
      throw new Error(
        `only ${c.open} of ${listeners} listeners connected: ${JSON.stringify(c.failures)}`,
      );
    }
    // Keep-alives: every listener must see one within 1.5 intervals of the last connection.
    await fleet.reset();
    await ctx.pause(Math.round(keepAliveMs * 1.5) + 500);
    const held = await fleet.stats();
    const mem = await instance.sample({ gc: true });
    const result = await closedLoopFanout(ctx, {
      fleet,
      publisher,
      instances: [instance],
      events: 1,
      warmup: 1,
      listeners: c.open,
      maxMs: 30_000,
    });
    return {
      requested,
      serverFdLimit: nofile,
      cappedByFdLimit: listeners < requested,
      listeners: c.open,
      connectMs: c.ms,
      keepAliveToAll: held.listenersWithKeepAlive === c.open,
      listenersWithKeepAlive: held.listenersWithKeepAlive,
      rssMB: Math.round((mem.rss / MB) * 10) / 10,
      heapMB: Math.round((mem.heapUsed / MB) * 10) / 10,
      rssPerListenerKB: Math.round(((mem.rss - idle.rss) / c.open / 1024) * 100) / 100,
      deliverAllMs: result.maxMs,
      deliverP50Ms: result.p50Ms,
      exactlyOnce: result.exactlyOnce,
      lost: result.lost,
      duplicates: result.duplicates,
      closedUnexpectedly: held.closedUnexpectedly + result.closedUnexpectedly,
    };
  },
};
