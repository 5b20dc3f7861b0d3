// Hostile clients: what non-reading replays and concurrent whole-history reads cost. 10,000
// stored events of one user, each name 256 emoji (1 KiB of UTF-8); then N listeners resume
// with Last-Event-ID: 0 and never read, and later M clients read that user's whole history
// at once. RSS before, at its peak and after, the liveness probe answering throughout.
import net from 'node:net';
import { MB, SOURCES } from '../lib/harness.mjs';
import { n } from '../lib/report.mjs';

const USER = 'hostile';
const NAME = '\u{1F600}'.repeat(256);
const LISTEN = '/api/webhooks/prevnames/listen';

export const hostileMemory = {
  name: 'hostile-memory',
  title: (p) =>
    `Hostile clients: ${n(p.listeners)} non-reading replays and ${n(p.reads)} concurrent whole-history reads over ${n(p.events)} events of 256-emoji names`,
  size: (q) =>
    q
      ? { events: 10_000, listeners: 50, reads: 20 }
      : { events: 10_000, listeners: 1_000, reads: 150 },
  sides: ['service'],
  budgetMs: 600_000,
  metrics: [
    { key: 'rssBeforeMB', label: 'RSS before', unit: 'MB', better: 'lower' },
    { key: 'heapBeforeMB', label: 'V8 heap before', unit: 'MB', better: 'lower' },
    { key: 'replayPeakMB', label: 'replays: RSS at peak', unit: 'MB', better: 'lower' },
    { key: 'replayAfterMB', label: 'replays: RSS after', unit: 'MB', better: 'lower' },
    { key: 'replayHeapAfterMB', label: 'replays: V8 heap after', unit: 'MB', better: 'lower' },
    {
      key: 'replayLeft',
      label: 'replays: still connected after the wait',
      unit: '',
      better: 'lower',
    },
    { key: 'replayCutS', label: 'replays: all cut after', unit: 's', better: 'lower' },
    { key: 'readsPeakMB', label: 'history reads: RSS at peak', unit: 'MB', better: 'lower' },
    { key: 'readsAfterMB', label: 'history reads: RSS after', unit: 'MB', better: 'lower' },
    { key: 'readsOk', label: 'history reads: 200 (whole)', unit: '', better: 'higher' },
    { key: 'reads503', label: 'history reads: 503', unit: '', better: 'lower' },
    { key: 'probeMaxMs', label: 'liveness probe: slowest', unit: 'ms', better: 'lower' },
    { key: 'probeFailures', label: 'liveness probe: failures', unit: '', better: 'lower' },
    { key: 'alive', label: 'instance alive throughout', unit: '', better: 'true' },
  ],
  async run(ctx, target, { events, listeners, reads }) {
    const { database, instance } = await ctx.server(target);
    await ctx.postgres.with(database, (c) =>
      c.query(
        `INSERT INTO name_change_events (user_id, type, name, changed_at)
         SELECT $1, 'username', $2, timestamptz '2024-01-01T00:00:00Z' + g * interval '1 ms'
           FROM generate_series(1, $3::int) g`,
        [USER, NAME, events],
      ),
    );
    const mb = (bytes) => Math.round((bytes / MB) * 10) / 10;
    const before = await instance.sample({ gc: true });
    const probe = livenessProbe(instance);
    const watch = rssWatch(instance);

    // Replays that are never read: each socket reads its head, then stops.
    const sockets = await Promise.all(
      Array.from({ length: listeners }, (_, i) =>
        stalledReplay(instance, SOURCES[i % SOURCES.length]),
      ),
    );
    const openedAt = Date.now();
    // The service cuts those it could not finish (none reads) while they still hold on: its
    // listener gauge shows who is left. A replay the kernel's buffers took whole is live.
    await until(async () => (await listenerGauge(instance)) === 0, ctx.quick ? 30_000 : 150_000);
    const replayLeft = await listenerGauge(instance);
    const replayCutS = Math.round((Date.now() - openedAt) / 100) / 10;
    for (const s of sockets) s.socket.destroy();
    await until(async () => (await listenerGauge(instance)) === 0, 30_000);
    const replayPeak = watch.takePeak();
    const replayAfter = instance.child.alive ? await instance.sample({ gc: true }) : null;

    // Whole-history reads, all at once.
    const statuses = await Promise.all(
      Array.from({ length: reads }, () => wholeHistory(instance, events)),
    );
    const readsPeak = watch.takePeak();
    const readsAfter = instance.child.alive ? await instance.sample({ gc: true }) : null;
    watch.stop();
    const probed = await probe.stop();
    return {
      events,
      listeners,
      reads,
      rssBeforeMB: mb(before.rss),
      replayPeakMB: mb(replayPeak),
      replayAfterMB: replayAfter ? mb(replayAfter.rss) : NaN,
      heapBeforeMB: mb(before.heapUsed),
      replayHeapAfterMB: replayAfter ? mb(replayAfter.heapUsed) : NaN,
      replayLeft,
      replayCutS: replayLeft === 0 ? replayCutS : NaN,
      readsPeakMB: mb(readsPeak),
      readsAfterMB: readsAfter ? mb(readsAfter.rss) : NaN,
      readsOk: statuses.filter((s) => s === 'whole').length,
      reads503: statuses.filter((s) => s === 503).length,
      readsOther: statuses.filter((s) => s !== 'whole' && s !== 503),
      probeMaxMs: probed.maxMs,
      probeFailures: probed.failures,
      alive: instance.child.alive,
    };
  },
};

/** A resume that reads the response's head, then never reads again. */
function stalledReplay(instance, localAddress) {
  return new Promise((resolve) => {
    const socket = net.connect({ port: instance.port, host: '127.0.0.1', localAddress });
    const state = { socket };
    socket.on('error', () => undefined);
    let head = '';
    const onData = (chunk) => {
      head += chunk.toString('latin1');
      if (head.includes('retry: ') || head.includes('\r\n\r\n{')) {
        socket.off('data', onData);
        socket.pause();
        resolve(state);
      }
    };
    socket.on('data', onData);
    socket.on('close', () => resolve(state));
    socket.write(`GET ${LISTEN} HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: 0\r\n\r\n`);
  });
}

async function until(check, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

async function listenerGauge(instance) {
  try {
    const text = await (await fetch(`${instance.origin}/api/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('name_history_sse_listeners '));
    return line ? Number(line.split(' ')[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** One whole-history read: 'whole' when it is the 200 with every entry, else its status. */
async function wholeHistory(instance, events) {
  try {
    const response = await fetch(`${instance.origin}/api/users/${USER}/prevnames`);
    if (response.status !== 200) return response.status;
    const body = await response.json();
    return body.prevnames.length === events ? 'whole' : 'partial';
  } catch (error) {
    return error.cause?.code ?? error.message;
  }
}

/** RSS every 100 ms; the highest since the last `takePeak()`. */
function rssWatch(instance) {
  let peak = 0;
  const timer = setInterval(() => {
    if (!instance.child.alive) return;
    void instance.sample().then((s) => (peak = Math.max(peak, s.rss)));
  }, 100);
  return {
    takePeak: () => {
      const value = peak;
      peak = 0;
      return value;
    },
    stop: () => clearInterval(timer),
  };
}

/** GET /api/health/live every 250 ms, each given 10 s: the slowest answer and the failures. */
function livenessProbe(instance) {
  let maxMs = 0;
  let failures = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = Date.now();
      try {
        const response = await fetch(`${instance.origin}/api/health/live`, {
          signal: AbortSignal.timeout(10_000),
        });
        await response.arrayBuffer();
        if (response.status !== 200) failures++;
      } catch {
        failures++;
      }
      maxMs = Math.max(maxMs, Date.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return { maxMs, failures };
    },
  };
}
