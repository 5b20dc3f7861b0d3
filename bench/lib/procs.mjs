// Child processes of a benchmark run: started through a shell that raises the soft
// file-descriptor limit to the hard one, tracked, and killed on every way out of the run.
import { spawn, execFileSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';

const live = new Set();
let exitHooksInstalled = false;
let exiting = false;

/** True once the run is stopping (signal, error): nothing new may be started. */
export function isExiting() {
  return exiting;
}

function killAllSync() {
  for (const child of live) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
}

/**
 * Installs the exit hooks once: on a normal exit, an error or a signal, `cleanup` runs
 * (bounded by `graceMs`) and then every child still alive is killed.
 */
export function installExitHooks(cleanup, graceMs = 10_000) {
  if (exitHooksInstalled) {
    return;
  }
  exitHooksInstalled = true;
  process.on('exit', killAllSync);
  const bail = (code, reason) => {
    if (exiting) {
      killAllSync();
      process.exit(code);
    }
    exiting = true;
    if (reason) {
      process.stderr.write(`\nbench: ${reason}; stopping children and cleaning up\n`);
    }
    const hard = setTimeout(() => process.exit(code), graceMs);
    hard.unref();
    Promise.resolve()
      .then(cleanup)
      .catch((error) => process.stderr.write(`bench: cleanup failed: ${error?.message ?? error}\n`))
      .finally(() => process.exit(code));
  };
  process.on('SIGINT', () => bail(130, 'interrupted'));
  process.on('SIGTERM', () => bail(143, 'terminated'));
  process.on('SIGHUP', () => bail(129, 'hang-up'));
  process.on('uncaughtException', (error) => bail(1, `uncaught ${error?.stack ?? error}`));
  process.on('unhandledRejection', (error) =>
    bail(1, `unhandled rejection ${error?.stack ?? error}`),
  );
}

/** A tracked child with an IPC channel, a tail of its output and an RPC client. */
export class Child extends EventEmitter {
  constructor(name, cmd, args, { env = {}, cwd, echo = false } = {}) {
    super();
    if (exiting) {
      throw new Error(`not starting ${name}: the run is stopping`);
    }
    this.name = name;
    this.tail = [];
    this.nextId = 1;
    this.pending = new Map();
    // `exec` keeps the pid: the shell only raises the fd limit first.
    const shell = 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"';
    this.proc = spawn('/bin/sh', ['-c', shell, 'sh', cmd, ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.pid = this.proc.pid;
    live.add(this.proc);
    this.exited = new Promise((resolve) => {
      this.proc.once('exit', (code, signal) => {
        live.delete(this.proc);
        this.exitCode = code;
        this.exitSignal = signal;
        for (const { reject, timer } of this.pending.values()) {
          clearTimeout(timer);
          reject(
            new Error(
              `${name} exited (${code ?? signal}) during a call; output:\n${this.output()}`,
            ),
          );
        }
        this.pending.clear();
        resolve({ code, signal });
      });
    });
    for (const stream of [this.proc.stdout, this.proc.stderr]) {
      stream.setEncoding('utf8');
      stream.on('data', (text) => {
        for (const line of text.split('\n')) {
          if (line) {
            this.tail.push(line.length > 500 ? `${line.slice(0, 500)}…` : line);
            if (echo) {
              process.stderr.write(`  [${name}] ${line}\n`);
            }
          }
        }
        if (this.tail.length > 40) {
          this.tail.splice(0, this.tail.length - 40);
        }
      });
    }
    this.proc.on('message', (msg) => this.#onMessage(msg));
    this.proc.on('error', (error) => this.tail.push(`spawn error: ${error.message}`));
  }

  get alive() {
    return this.exitCode === undefined && this.exitSignal === undefined;
  }

  output() {
    return this.tail.slice(-15).join('\n');
  }

  #onMessage(msg) {
    if (msg?.rpc === 'reply' || msg?.__benchProbe === 1) {
      const waiter = this.pending.get(msg.id);
      if (waiter) {
        this.pending.delete(msg.id);
        clearTimeout(waiter.timer);
        if (msg.error) {
          waiter.reject(new Error(`${this.name}: ${msg.error}`));
        } else {
          waiter.resolve(msg.__benchProbe === 1 ? msg : msg.result);
        }
      }
    } else if (msg?.rpc === 'event') {
      this.emit('event', msg.event, msg.data);
    }
  }

  #send(message, timeoutMs) {
    if (!this.alive || !this.proc.connected) {
      return Promise.reject(new Error(`${this.name} is not running; output:\n${this.output()}`));
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.name}: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.proc.send({ ...message, id });
    });
  }

  /** Calls a method served by `serveRpc` in the child. */
  call(method, params = {}, timeoutMs = 60_000) {
    return this.#send({ rpc: 'call', method, params }, timeoutMs);
  }

  /** Asks bench/lib/probe.mjs (loaded into a server) for its memory and event-loop figures. */
  probe({ gc = false, timeoutMs = 5_000 } = {}) {
    return this.#send({ __benchProbe: 1, gc }, timeoutMs);
  }

  /** `signal` (SIGTERM), then SIGKILL after `graceMs`. */
  async stop(graceMs = 5_000, signal = 'SIGTERM') {
    if (!this.alive) {
      return;
    }
    try {
      this.proc.kill(signal);
    } catch {
      // gone already
    }
    const timedOut = await Promise.race([
      this.exited.then(() => false),
      sleep(graceMs).then(() => true),
    ]);
    if (timedOut && this.alive) {
      try {
        this.proc.kill('SIGKILL');
      } catch {
        // gone already
      }
      await Promise.race([this.exited, sleep(2_000)]);
    }
  }
}

/**
 * A port free right now on every local address, below the kernel's ephemeral range
 * (32768–60999): the load generators hold tens of thousands of outgoing connections, and a
 * port the kernel picked could be taken by one of them before the service binds it.
 */
let nextPort = 20_000 + Math.floor(Math.random() * 10_000);
export async function freePort() {
  for (let tries = 0; tries < 10_000; tries++) {
    const port = 20_000 + ((nextPort++ - 20_000) % 10_000);
    const free = await new Promise((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('No free port in 20000–29999');
}

/** Polls `url` until it answers 200, the child exits, or `timeoutMs` passes. */
export async function waitReady(url, child, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (!child.alive) {
      throw new Error(
        `${child.name} exited (${child.exitCode ?? child.exitSignal}) before it was ready:\n${child.output()}`,
      );
    }
    try {
      const res = await request(url, { headersTimeout: 2_000, bodyTimeout: 2_000 });
      await res.body.dump();
      if (res.statusCode === 200) {
        return;
      }
      last = `status ${res.statusCode}`;
    } catch (error) {
      last = error.code ?? error.message;
    }
    await sleep(100);
  }
  throw new Error(
    `${child.name} not ready at ${url} after ${timeoutMs} ms (${last}):\n${child.output()}`,
  );
}

// --- /proc readings of a server process -------------------------------------------------

let clockTicks;
function ticksPerSecond() {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

function cpuFromStat(path) {
  const text = readFileSync(path, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 of proc(5) (state); utime and stime are fields 14 and 15.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / ticksPerSecond();
}

/** CPU time (user+system, ms) of the whole process and of its main (event-loop) thread. */
export function readCpuMs(pid) {
  try {
    return {
      process: cpuFromStat(`/proc/${pid}/stat`),
      mainThread: cpuFromStat(`/proc/${pid}/task/${pid}/stat`),
    };
  } catch {
    return { process: NaN, mainThread: NaN };
  }
}

/** Resident set size in bytes. */
export function readRssBytes(pid) {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** The soft RLIMIT_NOFILE of a running process. */
export function readNofile(pid) {
  try {
    const match = /Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/.exec(
      readFileSync(`/proc/${pid}/limits`, 'utf8'),
    );
    return match ? (match[1] === 'unlimited' ? Infinity : Number(match[1])) : NaN;
  } catch {
    return NaN;
  }
}
