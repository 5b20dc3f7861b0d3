// Name search (issue 23): the same searches over 1,000,000 and over 10,000,000 stored names
// (seeded with INSERT … SELECT generate_series, then VACUUM ANALYZE), exact and prefix, over
// 64 connections; and, in the same run and on the same database, history reads, whose p99
// the exact search's is held to (64 connections on 2 cores queue: an absolute figure would
// measure the machine). A search answers from an index: for a given number of matches (here
// 1 exact, 10 by prefix) its cost must not grow with the table.
import { Instance, startHistoryReader, startSearcher } from '../lib/harness.mjs';
import { Histogram } from '../lib/histogram.mjs';
import { n } from '../lib/report.mjs';

const SEARCH_TOKEN = 'a-search-token-for-the-benchmark';

const figures = (prefix, label, extra = {}) => [
  { key: `${prefix}ReqPerSec`, label: `${label}: req/s`, unit: '/s', better: 'higher' },
  { key: `${prefix}P50Ms`, label: `${label}: p50`, unit: 'ms', better: 'lower' },
  { key: `${prefix}P99Ms`, label: `${label}: p99`, unit: 'ms', better: 'lower', ...extra },
];

export const search = {
  name: 'search',
  sides: ['service'],
  // Seeding 10,000,000 rows into a table of five indexes takes minutes on 2 cores.
  budgetMs: 2_400_000,
  title: (p) =>
    `Name search: ${n(p.small)} and ${n(p.big)} stored names, exact and prefix, ${p.connections} connections, ${p.durationMs / 1000} s each`,
  size: (q) =>
    q
      ? { small: 20_000, big: 200_000, connections: 64, durationMs: 1_500, warmupMs: 300 }
      : {
          small: 1_000_000,
          big: 10_000_000,
          connections: 64,
          durationMs: 10_000,
          warmupMs: 2_000,
        },
  metrics: [
    ...figures('exactSmall', 'exact, smaller table'),
    ...figures('prefixSmall', 'prefix, smaller table'),
    ...figures('exactBig', 'exact, larger table'),
    ...figures('prefixBig', 'prefix, larger table'),
    ...figures('history', 'history reads, smaller table'),
    {
      key: 'exactGrowth',
      label: 'exact p99, larger ÷ smaller table',
      unit: '×',
      better: 'lower',
      target: { op: '<=', value: 1.2 },
    },
    {
      key: 'exactVsHistory',
      label: 'exact p99 (larger table) ÷ history p99',
      unit: '×',
      better: 'lower',
      target: { op: '<=', value: 1 },
    },
    { key: 'correct', label: 'answers checked and correct', unit: '', better: 'true' },
  ],
  async run(ctx, target, { small, big, connections, durationMs, warmupMs }) {
    // Servers of this scenario's own (the search needs its token, and no rate limit).
    const env = { SEARCH_TOKEN, SEARCH_RATE_LIMIT: '0' };
    const start = async (events) => {
      const database = await ctx.newDatabase();
      const instance = await Instance.start(ctx, target, { database, env });
      const started = Date.now();
      await seedNames(ctx.postgres, database, events);
      return { instance, events, seedMs: Date.now() - started };
    };
    const smaller = await start(small);
    const larger = await start(big);
    const searcher = await startSearcher(ctx);
    const reader = await startHistoryReader(ctx);
    const measure = async (child, params) => {
      await child.call('run', { ...params, durationMs: warmupMs }, warmupMs + 60_000);
      const r = await child.call('run', { ...params, durationMs }, durationMs + 60_000);
      const lat = Histogram.fromJSON(r.latency).summaryMs();
      const ok = r.mismatches === 0 && r.checked > 0 && Object.keys(r.errors).length === 0;
      return { reqPerSec: Math.round(r.perSec), p50Ms: lat.p50, p99Ms: lat.p99, ok, r };
    };
    const searchOn = ({ instance, events }, match) =>
      measure(searcher, {
        origin: instance.origin,
        connections,
        events,
        match,
        token: SEARCH_TOKEN,
      });
    const results = {
      history: await measure(reader, {
        origin: smaller.instance.origin,
        connections,
        users: small / 10,
        expectEntries: 10,
      }),
      exactSmall: await searchOn(smaller, 'exact'),
      prefixSmall: await searchOn(smaller, 'prefix'),
      exactBig: await searchOn(larger, 'exact'),
      prefixBig: await searchOn(larger, 'prefix'),
    };
    const out = { seedMsSmall: smaller.seedMs, seedMsBig: larger.seedMs };
    for (const [key, { reqPerSec, p50Ms, p99Ms }] of Object.entries(results)) {
      Object.assign(out, {
        [`${key}ReqPerSec`]: reqPerSec,
        [`${key}P50Ms`]: p50Ms,
        [`${key}P99Ms`]: p99Ms,
      });
    }
    const ratio = (a, b) => (b > 0 ? Math.round((a / b) * 100) / 100 : null);
    out.exactGrowth = ratio(results.exactBig.p99Ms, results.exactSmall.p99Ms);
    out.exactVsHistory = ratio(results.exactBig.p99Ms, results.history.p99Ms);
    out.correct = Object.values(results).every((result) => result.ok);
    out.statuses = Object.fromEntries(
      Object.entries(results).map(([key, { r }]) => [key, r.statuses]),
    );
    out.failures = Object.fromEntries(
      Object.entries(results)
        .filter(([, { r }]) => r.firstFailure)
        .map(([key, { r }]) => [key, r.firstFailure]),
    );
    return out;
  },
};

/**
 * `events` names, `name-` and a 9-digit number, unique; users of ten names each (`user<k>`,
 * the history reader's), one second apart; then VACUUM ANALYZE, as after a bulk load.
 */
async function seedNames(postgres, database, events) {
  await postgres.with(database, async (c) => {
    await c.query('SET synchronous_commit = off');
    await c.query(
      `INSERT INTO name_change_events (user_id, type, name, changed_at)
       SELECT 'user' || (g % $2),
              CASE WHEN g % 3 = 0 THEN 'displayname' ELSE 'username' END,
              'name-' || lpad(g::text, 9, '0'),
              timestamptz '2020-01-01 00:00:00+00' + g * interval '1 second'
         FROM generate_series(1, $1::int) AS g`,
      [events, events / 10],
    );
    await c.query('VACUUM ANALYZE name_change_events');
  });
}
