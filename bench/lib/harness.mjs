// Building blocks the scenarios share: server instances under test, a fleet of listener
// processes, a publisher process, and the closed-loop fan-out measurement.
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Child, freePort, readCpuMs, readNofile, readRssBytes, waitReady } from './procs.mjs';
import { Histogram } from './histogram.mjs';

const here = (rel) => fileURLToPath(new URL(rel, import.meta.url));
export const PROBE = here('./probe.mjs');
const LOAD = {
  listeners: here('../load/listeners.mjs'),
  publisher: here('../load/publisher.mjs'),
  history: here('../load/history.mjs'),
  search: here('../load/search.mjs'),
};

/** Loopback source addresses for client sockets: 127.0.0.2 … 127.0.0.9. */
export const SOURCES = Array.from({ length: 8 }, (_, i) => `127.0.0.${i + 2}`);
/** Connections per listener process: well under the 20,000 fds a process may hold here. */
const PER_LISTENER_PROCESS = 12_000;

/**
 * One running server of a target. `target.argv` is the command; when it starts with
 * `node`, the probe (memory, event-loop) is loaded into it.
 */
export class Instance {
  static async start(ctx, target, { database, env = {}, label = target.name, redisPrefix }) {
    const port = await freePort();
    let [cmd, ...args] = target.argv;
    const probed = cmd === 'node' || cmd === process.execPath;
    if (probed) {
      const profile = ctx.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${ctx.profileDir}`] : [];
      args = [...profile, '--expose-gc', '--import', PROBE, ...args];
      cmd = process.execPath;
    }
    const child = new Child(`${label}:${port}`, cmd, args, {
      cwd: target.cwd ?? ctx.root,
      echo: ctx.verbose,
      env: {
        NODE_ENV: 'production',
        PORT: String(port),
        DATABASE_URL: ctx.postgres.urlFor(database),
        // On a cluster (--redis-cluster), its nodes instead of the one Redis.
        ...(ctx.redisClusterNodes
          ? { REDIS_URL: '', REDIS_CLUSTER_NODES: ctx.redisClusterNodes }
          : { REDIS_URL: ctx.redisUrl }),
        REDIS_KEY_PREFIX: redisPrefix ?? ctx.redisPrefix,
        REDIS_CHANNEL: `${redisPrefix ?? ctx.redisPrefix}:events`,
        // The service's own default (info): its access log writes a line per request, as in
        // production, and the benchmark pays for it.
        LOG_LEVEL: 'info',
        SSE_MAX_LISTENERS: '100000',
        // The load's listeners come from a handful of loopback addresses.
        SSE_MAX_LISTENERS_PER_ADDRESS: '100000',
        ...target.env,
        ...env,
      },
    });
    const instance = new Instance(child, port, probed);
    instance.redisPrefix = redisPrefix ?? ctx.redisPrefix;
    ctx.track(instance);
    await waitReady(`${instance.origin}/api/health/ready`, child, 60_000);
    return instance;
  }

  constructor(child, port, probed) {
    this.child = child;
    this.port = port;
    this.probed = probed;
    this.origin = `http://127.0.0.1:${port}`;
  }

  get pid() {
    return this.child.pid;
  }

  /** Whether `status` answers a publish that was accepted. */
  publishOk(status) {
    return status === 200;
  }

  nofile() {
    return readNofile(this.pid);
  }

  /**
   * /proc CPU and RSS, plus heap and event-loop time from the probe when loaded. `gc`: true
   * for a full GC first, 'last-resort' for one that also frees the pages V8 keeps pooled.
   */
  async sample({ gc = false } = {}) {
    let probe = null;
    if (this.probed) {
      probe = await this.child.probe({ gc }).catch(() => null);
    }
    return {
      at: Date.now(),
      cpu: readCpuMs(this.pid),
      rss: readRssBytes(this.pid),
      heapUsed: probe?.memory.heapUsed ?? NaN,
      external: probe ? probe.memory.external + probe.memory.arrayBuffers : NaN,
      loopActiveMs: probe?.loop.activeMs ?? NaN,
    };
  }

  stop() {
    return this.child.stop();
  }
}

/** Differences of two `sample()`s, summed over instances. */
export function usage(before, after) {
  let cpuMs = 0;
  let mainThreadMs = 0;
  let loopMs = 0;
  for (let i = 0; i < before.length; i++) {
    cpuMs += after[i].cpu.process - before[i].cpu.process;
    mainThreadMs += after[i].cpu.mainThread - before[i].cpu.mainThread;
    loopMs += after[i].loopActiveMs - before[i].loopActiveMs;
  }
  return { cpuMs, mainThreadMs, loopMs };
}

/** SSE listeners spread over as many load processes as the fd limit requires. */
export class ListenerFleet {
  static async start(ctx, count) {
    const processes = Math.max(1, Math.ceil(count / PER_LISTENER_PROCESS));
    const children = [];
    for (let i = 0; i < processes; i++) {
      const child = new Child(`listeners#${i}`, process.execPath, [LOAD.listeners], {
        cwd: ctx.root,
        echo: ctx.verbose,
      });
      ctx.track(child);
      children.push(child);
    }
    return new ListenerFleet(children);
  }

  constructor(children) {
    this.children = children;
    this.waiters = new Map();
    this.active = children.map(() => false);
    children.forEach((child, i) =>
      child.on('event', (event, seq) => {
        if (event === 'done') {
          this.#done(i, seq);
        }
      }),
    );
  }

  #done(i, seq) {
    const waiter = this.waiters.get(seq);
    if (waiter) {
      waiter.remaining.delete(i);
      if (waiter.remaining.size === 0) {
        this.waiters.delete(seq);
        clearTimeout(waiter.timer);
        waiter.resolve(true);
      }
    }
  }

  /**
   * Opens `count` listeners on `origins` (round robin), each process taking its share, from
   * the loopback source addresses. Returns the totals.
   */
  async connect(origins, count, { concurrency = 200, timeoutMs = 120_000 } = {}) {
    const n = this.children.length;
    const parsed = origins.map((o) => {
      const url = new URL(o);
      return { host: url.hostname, port: Number(url.port) };
    });
    const results = await Promise.all(
      this.children.map((child, i) =>
        child.call(
          'connect',
          {
            origins: parsed,
            path: '/api/webhooks/prevnames/listen',
            count: Math.floor(count / n) + (i < count % n ? 1 : 0),
            concurrency: Math.ceil(concurrency / n),
            sources: SOURCES,
            timeoutMs,
          },
          timeoutMs + 30_000,
        ),
      ),
    );
    results.forEach((r, i) => {
      this.active[i] = r.open > 0;
    });
    const failures = {};
    for (const r of results) {
      for (const [code, k] of Object.entries(r.failures)) {
        failures[code] = (failures[code] ?? 0) + k;
      }
    }
    return {
      requested: count,
      connected: results.reduce((s, r) => s + r.connected, 0),
      open: results.reduce((s, r) => s + r.open, 0),
      failures,
      ms: Math.max(...results.map((r) => r.ms)),
    };
  }

  async expectSeqs(maxSeq, notify) {
    await Promise.all(this.children.map((c) => c.call('expectSeqs', { maxSeq, notify })));
  }

  async reset() {
    await Promise.all(this.children.map((c) => c.call('reset')));
  }

  /** Resolves true when every listener has event `seq`, false after `timeoutMs`. */
  waitDone(seq, timeoutMs) {
    const remaining = new Set(this.children.map((_, i) => i).filter((i) => this.active[i]));
    if (remaining.size === 0) {
      return Promise.resolve(false);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(seq);
        resolve(false);
      }, timeoutMs);
      this.waiters.set(seq, { remaining, resolve, timer });
    });
  }

  cancelWait(seq) {
    const waiter = this.waiters.get(seq);
    if (waiter) {
      this.waiters.delete(seq);
      clearTimeout(waiter.timer);
      waiter.resolve(false);
    }
  }

  /** Totals over the processes; `latency` is a merged Histogram. */
  async stats(range = {}) {
    const all = await Promise.all(this.children.map((c) => c.call('stats', range)));
    const total = { latency: new Histogram(), minUnique: Infinity };
    for (const s of all) {
      for (const [key, value] of Object.entries(s)) {
        if (key === 'latency') {
          total.latency.merge(value);
        } else if (key === 'minUnique') {
          total.minUnique = s.open > 0 ? Math.min(total.minUnique, value) : total.minUnique;
        } else if (key === 'maxUnique') {
          total.maxUnique = Math.max(total.maxUnique ?? 0, value);
        } else if (typeof value === 'number') {
          total[key] = (total[key] ?? 0) + value;
        }
      }
    }
    if (!Number.isFinite(total.minUnique)) {
      total.minUnique = 0;
    }
    return total;
  }

  /** Waits (bounded) until every open listener has `expected` unique events. */
  async settle(expected, timeoutMs = 5_000) {
    const deadline = Date.now() + timeoutMs;
    let s = await this.stats();
    while (s.minUnique < expected && Date.now() < deadline) {
      await sleep(100);
      s = await this.stats();
    }
    return s;
  }

  async stop() {
    await Promise.all(this.children.map((c) => c.call('close', {}, 10_000).catch(() => {})));
    await Promise.all(this.children.map((c) => c.stop(2_000)));
  }
}

/** The publisher process: one pool per instance. */
export class Publisher {
  static async start(ctx, origins, connections = 1) {
    const child = new Child('publisher', process.execPath, [LOAD.publisher], {
      cwd: ctx.root,
      echo: ctx.verbose,
    });
    ctx.track(child);
    await child.call('init', { origins, connections });
    return new Publisher(child);
  }

  constructor(child) {
    this.child = child;
  }

  publishOne(seq, pool = 0) {
    return this.child.call('publishOne', { seq, pool }, 40_000);
  }

  run(params) {
    return this.child.call('run', params, (params.durationMs ?? 10_000) + 60_000);
  }

  async stop() {
    await this.child.call('close', {}, 5_000).catch(() => {});
    await this.child.stop(2_000);
  }
}

export async function startHistoryReader(ctx) {
  const child = new Child('history-reader', process.execPath, [LOAD.history], {
    cwd: ctx.root,
    echo: ctx.verbose,
  });
  ctx.track(child);
  return child;
}

export async function startSearcher(ctx) {
  const child = new Child('searcher', process.execPath, [LOAD.search], {
    cwd: ctx.root,
    echo: ctx.verbose,
  });
  ctx.track(child);
  return child;
}

/**
 * Closed-loop fan-out: publish one event, wait until every listener has it (or
 * `perEventTimeoutMs`), publish the next. Server CPU and event-loop time are sampled around
 * the measured events only; a few warm-up events go first.
 */
export async function closedLoopFanout(
  ctx,
  { fleet, publisher, instances, events, warmup = 20, listeners, maxMs, ratePerSec = 0 },
) {
  const startSeq = ctx.nextSeq(warmup + events);
  await fleet.expectSeqs(startSeq + warmup + events, true);
  const perEventTimeoutMs = 10_000;
  const pools = instances.length;
  for (let k = 0; k < warmup; k++) {
    const done = fleet.waitDone(startSeq + k, perEventTimeoutMs);
    const r = await publisher.publishOne(startSeq + k, k % pools);
    if (!instances[k % pools].publishOk(r.status)) {
      fleet.cancelWait(startSeq + k);
      throw new Error(`warm-up publish answered ${r.status || r.error}`);
    }
    await done;
  }
  await sleep(200);
  await fleet.reset();
  const first = startSeq + warmup;
  const before = await Promise.all(instances.map((i) => i.sample()));
  const posts = new Histogram();
  const statuses = {};
  let ok = 0;
  let timeouts = 0;
  const started = Date.now();
  const deadline = started + maxMs;
  let published = 0;
  let timeoutsInARow = 0;
  for (let k = 0; k < events && Date.now() < deadline; k++) {
    const seq = first + k;
    if (ratePerSec > 0) {
      // Paced (open loop): each event at its time, whether the last one has arrived or not.
      const wait = started + (k * 1000) / ratePerSec - Date.now();
      if (wait > 0) await sleep(wait);
      const r = await publisher.publishOne(seq, k % pools);
      published++;
      statuses[r.status || r.error] = (statuses[r.status || r.error] ?? 0) + 1;
      posts.record(r.us);
      if (instances[k % pools].publishOk(r.status)) ok++;
      continue;
    }
    const done = fleet.waitDone(
      seq,
      Math.max(100, Math.min(perEventTimeoutMs, deadline - Date.now())),
    );
    const r = await publisher.publishOne(seq, k % pools);
    published++;
    statuses[r.status || r.error] = (statuses[r.status || r.error] ?? 0) + 1;
    posts.record(r.us);
    if (!instances[k % pools].publishOk(r.status)) {
      fleet.cancelWait(seq);
      continue;
    }
    ok++;
    if (await done) {
      timeoutsInARow = 0;
    } else {
      timeouts++;
      if (++timeoutsInARow === 3) {
        throw new Error(`3 events in a row did not reach every listener (last: ${seq})`);
      }
    }
  }
  const elapsedMs = Date.now() - started;
  let after = await Promise.all(instances.map((i) => i.sample()));
  const s = await fleet.settle(ok, ratePerSec > 0 ? maxMs : timeouts > 0 ? 2_000 : 500);
  // Paced, the deliveries may trail the last publish: their cost counts too.
  if (ratePerSec > 0) after = await Promise.all(instances.map((i) => i.sample()));
  const use = usage(before, after);
  const expected = ok * listeners;
  const lat = s.latency.summaryMs();
  return {
    listeners: s.open,
    events: ok,
    published,
    postStatuses: statuses,
    p50Ms: lat.p50,
    p99Ms: lat.p99,
    maxMs: lat.max,
    deliveries: s.unique,
    expected,
    lost: Math.max(0, expected - s.unique),
    duplicates: s.duplicates,
    outOfOrder: s.outOfOrder,
    exactlyOnce: s.unique === expected && s.duplicates === 0 && s.outOfOrder === 0,
    closedUnexpectedly: s.closedUnexpectedly,
    eventTimeouts: timeouts,
    elapsedMs,
    deliveriesPerSec: Math.round((s.unique * 1000) / elapsedMs),
    eventsPerSec: Math.round((ok * 10_000) / elapsedMs) / 10,
    loopUsPerDelivery: round3((use.loopMs * 1000) / Math.max(1, s.unique)),
    mainThreadUsPerDelivery: round3((use.mainThreadMs * 1000) / Math.max(1, s.unique)),
    cpuUsPerDelivery: round3((use.cpuMs * 1000) / Math.max(1, s.unique)),
    postP50Ms: posts.summaryMs().p50,
    postP99Ms: posts.summaryMs().p99,
  };
}

export function round3(x) {
  return Number.isFinite(x) ? Math.round(x * 1000) / 1000 : null;
}

export const MB = 1024 * 1024;
