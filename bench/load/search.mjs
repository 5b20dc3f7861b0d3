// Name searchers: `connections` closed loops of GET /api/prevnames for random seeded names
// for `durationMs`, through one undici pool. The names are those bench/scenarios/search.mjs
// seeds: `name-` and a 9-digit number. Exact searches ask for one name in upper case (one
// match); prefix searches for its first 13 characters (the ten names of its block of ten).
// Every answer's number of matches is checked, so a fast error cannot pass for a fast search.
//
// Forked by bench/run.mjs; driven over IPC (see bench/lib/rpc.mjs).
import { Pool } from 'undici';
import { Histogram, nowUs } from '../lib/histogram.mjs';
import { serveRpc } from '../lib/rpc.mjs';

const pad = (n) => String(n).padStart(9, '0');

async function run({ origin, connections = 64, durationMs = 10_000, events, match, token }) {
  const pool = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const headers = { authorization: `Bearer ${token}` };
  const latency = new Histogram();
  const statuses = {};
  const errors = {};
  let checked = 0;
  let mismatches = 0;
  /** What the first answer other than 200 said, for the report. */
  let firstFailure;
  const started = Date.now();
  const deadline = started + durationMs;
  const loop = async () => {
    while (Date.now() < deadline) {
      // A full block of ten: 10 … events - 1, by tens.
      const block = 1 + Math.floor(Math.random() * (events / 10 - 1));
      const name = `name-${pad(block * 10 + Math.floor(Math.random() * 10))}`;
      const path =
        match === 'prefix'
          ? `/api/prevnames?match=prefix&name=${name.slice(0, 13)}`
          : `/api/prevnames?name=${name.toUpperCase()}`;
      const t0 = nowUs();
      try {
        const res = await pool.request({
          path,
          method: 'GET',
          headers,
          headersTimeout: 30_000,
          bodyTimeout: 30_000,
        });
        const text = await res.body.text();
        latency.record(nowUs() - t0);
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        checked++;
        const matches = res.statusCode === 200 ? JSON.parse(text).matches : undefined;
        if (!Array.isArray(matches) || matches.length !== (match === 'prefix' ? 10 : 1)) {
          mismatches++;
          firstFailure ??= `${res.statusCode} ${path}: ${text.slice(0, 200)}`;
        }
      } catch (error) {
        const code = error.code ?? error.message;
        errors[code] = (errors[code] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  const ms = Date.now() - started;
  await pool.close();
  const ok = statuses[200] ?? 0;
  return {
    ok,
    statuses,
    errors,
    ms,
    perSec: (ok * 1000) / ms,
    checked,
    mismatches,
    firstFailure,
    latency: latency.toJSON(),
  };
}

serveRpc({ run });
