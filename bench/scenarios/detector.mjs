// The detector on a fake gateway (bench/lib/fake-gateway.mjs): one instance watching servers
// of 10,000 members each, first `small` then `large` members in all, a fresh database and a
// fresh instance each. Memory after the full views (RSS, and the V8 heap after a full GC),
// per member between the two, and RSS again once V8 has freed the pages it keeps pooled;
// members compared per second at the first sighting; and GUILD_MEMBER_UPDATEs turned into
// stored events per second.
import { setTimeout as sleep } from 'node:timers/promises';
import { BENCH_DISCORD_TOKEN, BenchDiscord, world } from '../lib/fake-gateway.mjs';
import { Instance, MB } from '../lib/harness.mjs';
import { n } from '../lib/report.mjs';

const PER_SERVER = 10_000;

async function figures(instance) {
  const text = await (await fetch(`${instance.origin}/api/metrics`)).text();
  const of = (series) => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line ? Number(line.slice(series.length + 1)) : 0;
  };
  return {
    compared: of('name_history_detector_members_compared_total{source="reconciliation"}'),
    live: of('name_history_detector_changes_total{source="live"}'),
    backlog:
      of('name_history_detector_backlog{queue="live"}') +
      of('name_history_detector_backlog{queue="reconcile"}'),
  };
}

/** Polls `check` (every 50 ms, or as long as `pause` says) until it says so. */
async function until(what, check, timeoutMs, pause = () => 50) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(pause());
  }
}

/** One instance watching `members`: its memory after the full views, and its rates. */
async function watch(ctx, target, members, updates) {
  const discord = await BenchDiscord.start(world(members, PER_SERVER));
  try {
    const database = await ctx.newDatabase();
    const instance = await Instance.start(ctx, target, {
      database,
      // A deployment of its own: the shard is not the other phase's instance's.
      redisPrefix: `${ctx.redisPrefix}:detector-${members}`,
      env: {
        DISCORD_TOKEN: BENCH_DISCORD_TOKEN,
        DISCORD_API_URL: discord.apiUrl,
        LOG_LEVEL: 'warn',
      },
    });
    // From the first member compared to the last.
    await until(
      'the first member compared',
      async () => (await figures(instance)).compared > 0,
      60_000,
    );
    const startedAt = Date.now();
    // A scrape costs the service about 6 ms of CPU (the consumers' lag, the health checks, the
    // text): at 20 a second that was a tenth of the event loop the comparisons run on. So
    // every 500 ms until 90 % are compared, then every 50 ms for the end.
    let compared = 0;
    await until(
      `${n(members)} members compared`,
      async () => {
        const f = await figures(instance);
        compared = f.compared;
        return f.compared >= members && f.backlog === 0;
      },
      600_000,
      () => (compared >= members * 0.9 ? 50 : 500),
    );
    const compareMs = Date.now() - startedAt;
    const after = await instance.sample({ gc: true });
    const released = await instance.sample({ gc: 'last-resort' });
    const liveAt = Date.now();
    discord.renames(updates, 1);
    await until(
      `${updates} live changes`,
      async () => (await figures(instance)).live >= updates,
      120_000,
    );
    const liveMs = Date.now() - liveAt;
    // Left running: the run stops every instance at its end (one stopped early counts as died).
    return {
      rss: after.rss,
      rssReleased: released.rss,
      heap: after.heapUsed,
      comparedPerSec: Math.round((members / Math.max(1, compareMs)) * 1000),
      updatesPerSec: Math.round((updates / Math.max(1, liveMs)) * 1000),
    };
  } finally {
    await discord.close();
  }
}

export const detector = {
  name: 'detector',
  title: (p) => `Detector, ${n(p.small)} then ${n(p.large)} members (one instance)`,
  size: (q) =>
    q
      ? { small: 2_000, large: 10_000, updates: 200 }
      : { small: 10_000, large: 200_000, updates: 2_000 },
  sides: ['service'],
  metrics: [
    {
      key: 'rssPerMemberKB',
      label: 'RSS growth per member',
      unit: 'KB',
      better: 'lower',
      // Issue 38: at most 0.5 KB per member without forced GC (2.1 KB with discord.js's cache).
      target: { op: '<=', value: 0.5 },
    },
    {
      key: 'heapPerMemberKB',
      label: 'V8 heap per member, after a full GC',
      unit: 'KB',
      better: 'lower',
      target: { op: '<=', value: 0.1 },
    },
    { key: 'rssSmallMB', label: 'RSS after the full views, small', unit: 'MB', better: 'lower' },
    { key: 'rssLargeMB', label: 'RSS after the full views, large', unit: 'MB', better: 'lower' },
    {
      // V8 keeps the pages a burst freed pooled and resident; it frees them only in a GC that
      // reduces memory (memory pressure). This is what the process needs, the figure above
      // what it holds.
      key: 'rssReleasedPerMemberKB',
      label: 'RSS growth per member, V8 pool freed',
      unit: 'KB',
      better: 'lower',
    },
    { key: 'rssReleasedLargeMB', label: 'RSS, V8 pool freed, large', unit: 'MB', better: 'lower' },
    {
      key: 'comparedPerSec',
      label: 'members compared per second (large, first sighting)',
      unit: '/s',
      better: 'higher',
      target: { op: '>=', value: 50_000 },
    },
    { key: 'updatesPerSec', label: 'live updates stored per second', unit: '/s', better: 'higher' },
  ],
  async run(ctx, target, { small, large, updates }) {
    const a = await watch(ctx, target, small, updates);
    const b = await watch(ctx, target, large, updates);
    const kb = (bytes) => Math.round((bytes / (large - small) / 1024) * 1000) / 1000;
    return {
      rssSmallMB: Math.round((a.rss / MB) * 10) / 10,
      rssLargeMB: Math.round((b.rss / MB) * 10) / 10,
      rssPerMemberKB: kb(b.rss - a.rss),
      rssReleasedLargeMB: Math.round((b.rssReleased / MB) * 10) / 10,
      rssReleasedPerMemberKB: kb(b.rssReleased - a.rssReleased),
      heapPerMemberKB: kb(b.heap - a.heap),
      comparedPerSec: b.comparedPerSec,
      updatesPerSec: b.updatesPerSec,
    };
  },
};
