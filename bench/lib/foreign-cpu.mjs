// This machine is shared (builds and test suites run beside the benchmark). The monitor
// measures the CPU that processes outside the run used while it ran, so a disturbed
// figure is flagged rather than trusted. Excluded: this run's process tree, Postgres and
// Redis (the run's own backing services) and kernel threads.
import { readFileSync, readdirSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

const SHARED_SERVICES = new Set(['postgres', 'redis-server']);
let ticksPerMs;

function tickMs() {
  if (ticksPerMs === undefined) {
    let hz = 100;
    try {
      hz = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      // keep 100
    }
    ticksPerMs = 1000 / hz;
  }
  return ticksPerMs;
}

/** pid → { ppid, comm, cpuMs } for every process readable now. */
function scan() {
  const table = new Map();
  for (const name of readdirSync('/proc')) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) {
      continue;
    }
    try {
      const text = readFileSync(`/proc/${name}/stat`, 'utf8');
      const open = text.indexOf('(');
      const close = text.lastIndexOf(')');
      const fields = text.slice(close + 2).split(' ');
      table.set(Number(name), {
        comm: text.slice(open + 1, close),
        ppid: Number(fields[1]),
        cpuMs: (Number(fields[11]) + Number(fields[12])) * tickMs(),
      });
    } catch {
      // exited while being read
    }
  }
  return table;
}

function isOurs(pid, table) {
  for (let p = pid, hops = 0; p > 1 && hops < 64; hops++) {
    if (p === process.pid) {
      return true;
    }
    const row = table.get(p);
    if (!row) {
      return false;
    }
    p = row.ppid;
  }
  return false;
}

function excluded(pid, row, table) {
  return pid === 2 || row.ppid === 2 || SHARED_SERVICES.has(row.comm) || isOurs(pid, table);
}

export class ForeignCpuMonitor {
  start(intervalMs = 1_000) {
    this.prev = scan();
    this.foreignMs = 0;
    this.top = new Map();
    this.started = Date.now();
    this.timer = setInterval(() => this.#tick(), intervalMs);
    this.timer.unref();
    return this;
  }

  #tick() {
    const current = scan();
    for (const [pid, row] of current) {
      if (excluded(pid, row, current)) {
        continue;
      }
      // A process first seen now started since the last scan: all its CPU is new.
      const delta = row.cpuMs - (this.prev.get(pid)?.cpuMs ?? 0);
      if (delta > 0) {
        this.foreignMs += delta;
        this.top.set(row.comm, (this.top.get(row.comm) ?? 0) + delta);
      }
    }
    this.prev = current;
  }

  /** Foreign CPU as a percentage of one core over the monitored time, and its main users. */
  stop() {
    clearInterval(this.timer);
    this.#tick();
    const ms = Math.max(1, Date.now() - this.started);
    const top = [...this.top.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([comm, cpu]) => `${comm} ${Math.round(cpu)} ms`);
    return { foreignCpuPct: Math.round((this.foreignMs / ms) * 1000) / 10, top };
  }
}

/**
 * Waits (at most `maxMs`) until other processes use less than `thresholdPct` of a core
 * over half a second. Returns the last measurement.
 */
export async function waitForQuiet(maxMs, thresholdPct = 15) {
  if (maxMs <= 0) {
    return { foreignCpuPct: null, top: [] };
  }
  const deadline = Date.now() + maxMs;
  let last;
  do {
    const monitor = new ForeignCpuMonitor().start(250);
    await sleep(500);
    last = monitor.stop();
    if (last.foreignCpuPct < thresholdPct) {
      break;
    }
  } while (Date.now() < deadline);
  return last;
}

/** The machine's CPU time so far, from /proc/stat: busy and total, in ticks, all cores. */
function machineTicks() {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fields.map(Number);
  const busy = user + nice + system + irq + softirq + steal;
  return { busy, total: busy + idle + iowait };
}

/**
 * How busy the whole machine is between start() and stop(): the share of all its cores'
 * time spent running anything (the servers, Postgres, Redis, the load processes), in %.
 * Near 100, a second instance has no idle core to run on.
 */
export class MachineCpu {
  start() {
    this.before = machineTicks();
    return this;
  }

  stop() {
    const after = machineTicks();
    const total = after.total - this.before.total;
    return total > 0 ? Math.round(((after.busy - this.before.busy) / total) * 1000) / 10 : null;
  }
}
