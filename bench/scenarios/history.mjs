// History reads: a seeded table (1,000,000 events over 100,000 users), GETs of random users
// over 64 connections.
import { seedHistory } from '../lib/db.mjs';
import { startHistoryReader } from '../lib/harness.mjs';
import { Histogram } from '../lib/histogram.mjs';
import { n } from '../lib/report.mjs';

export const history = {
  name: 'history',
  // A short scenario whose figures swing with the machine: the median of three rounds.
  rounds: 3,
  // baseline-nest: the same read as the smallest Nest `@Get()` route, the framework's floor.
  sides: ['service', 'baseline', 'baseline-nest'],
  title: (p) =>
    `History: ${n(p.events)} events over ${n(p.users)} users, ${p.connections} connections, ${p.durationMs / 1000} s`,
  size: (q) =>
    q
      ? { events: 20_000, users: 2_000, connections: 64, durationMs: 2_000, warmupMs: 500 }
      : { events: 1_000_000, users: 100_000, connections: 64, durationMs: 20_000, warmupMs: 3_000 },
  metrics: [
    {
      key: 'reqPerSec',
      label: 'req/s',
      unit: '/s',
      better: 'higher',
      target: { op: '>=', ratio: 0.8 },
    },
    { key: 'p50Ms', label: 'p50', unit: 'ms', better: 'lower' },
    { key: 'p99Ms', label: 'p99', unit: 'ms', better: 'lower', target: { op: '<=', ratio: 1.25 } },
    { key: 'correct', label: 'answers checked and correct', unit: '', better: 'true' },
  ],
  async run(ctx, target, { events, users, connections, durationMs, warmupMs }) {
    // The target creates its table at boot (the service by its migrations), then it is seeded.
    const { database, instance } = await ctx.server(target);
    const seedStarted = Date.now();
    await seedHistory(ctx.postgres, database, { events, users });
    const seedMs = Date.now() - seedStarted;
    const reader = await startHistoryReader(ctx);
    const common = { origin: instance.origin, connections, users, expectEntries: events / users };
    await reader.call('run', { ...common, durationMs: warmupMs }, warmupMs + 60_000);
    const r = await reader.call('run', { ...common, durationMs }, durationMs + 60_000);
    const lat = Histogram.fromJSON(r.latency).summaryMs();
    return {
      seedMs,
      requests: r.ok,
      statuses: r.statuses,
      errors: r.errors,
      reqPerSec: Math.round(r.perSec),
      p50Ms: lat.p50,
      p99Ms: lat.p99,
      maxMs: lat.max,
      correct:
        r.mismatches === 0 &&
        r.checked > 0 &&
        Object.keys(r.errors).length === 0 &&
        r.ok === lat.count,
      checked: r.checked,
      mismatches: r.mismatches,
    };
  },
};
