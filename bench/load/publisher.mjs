// Publisher load: POST /api/webhooks/prevnames through undici pools. Each event's name is
// "bench-<seq>-<sentUs>" (sentUs: CLOCK_MONOTONIC µs at send), which is how listeners
// time publish→receive without a shared table.
//
// Forked by bench/run.mjs; driven over IPC (see bench/lib/rpc.mjs).
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { Histogram, nowUs } from '../lib/histogram.mjs';
import { serveRpc } from '../lib/rpc.mjs';

const PATH = '/api/webhooks/prevnames';
const BASE_TIME = Date.UTC(2025, 0, 1);
let pools = [];

function init({ origins, connections = 1 }) {
  for (const pool of pools) {
    void pool.destroy();
  }
  pools = origins.map(
    (origin) => new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 }),
  );
  return { pools: pools.length };
}

function body(seq) {
  return JSON.stringify({
    userId: `bench-user-${seq % 1000}`,
    type: seq % 2 === 0 ? 'username' : 'displayname',
    name: `bench-${seq}-${nowUs()}`,
    changedAt: new Date(BASE_TIME + seq * 1000).toISOString(),
  });
}

async function post(seq, poolIndex) {
  const started = nowUs();
  const res = await pools[poolIndex % pools.length].request({
    path: PATH,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: body(seq),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  await res.body.dump();
  return { status: res.statusCode, us: nowUs() - started };
}

/** One event, now. */
async function publishOne({ seq, pool = 0 }) {
  try {
    return await post(seq, pool);
  } catch (error) {
    return { status: 0, error: error.code ?? error.message, us: 0 };
  }
}

/**
 * `concurrency` closed loops of POSTs for `durationMs` (or `maxEvents`), optionally paced
 * to `ratePerSec` in total. Sequence numbers start at `startSeq` and are never reused.
 */
async function run({
  concurrency = 10,
  durationMs = 10_000,
  maxEvents = 1_000_000,
  ratePerSec = 0,
  startSeq = 0,
}) {
  const latency = new Histogram();
  const statuses = {};
  const errors = {};
  let next = startSeq;
  let sent = 0;
  const last = startSeq + maxEvents;
  const started = Date.now();
  const deadline = started + durationMs;
  const intervalMs = ratePerSec > 0 ? 1000 / ratePerSec : 0;
  const loop = async (worker) => {
    while (Date.now() < deadline && next < last) {
      const seq = next++;
      if (intervalMs > 0) {
        const due = started + (seq - startSeq) * intervalMs;
        const wait = due - Date.now();
        if (wait > 0) {
          await sleep(Math.min(wait, deadline - Date.now()));
          if (Date.now() >= deadline) {
            break;
          }
        }
      }
      sent++;
      try {
        const { status, us } = await post(seq, worker);
        statuses[status] = (statuses[status] ?? 0) + 1;
        latency.record(us);
      } catch (error) {
        const code = error.code ?? error.message;
        errors[code] = (errors[code] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, i) => loop(i)));
  const ms = Date.now() - started;
  const ok = statuses[200] ?? 0;
  return {
    sent,
    ok,
    statuses,
    errors,
    ms,
    perSec: (ok * 1000) / ms,
    nextSeq: next,
    latency: latency.toJSON(),
  };
}

async function close() {
  await Promise.allSettled(pools.map((pool) => pool.close()));
  pools = [];
  return { closed: true };
}

serveRpc({ init, publishOne, run, close });
