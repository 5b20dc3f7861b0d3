// History readers: `connections` closed loops of GET /api/users/<random user>/prevnames for
// `durationMs`, through one undici pool. Bodies are read in full; the first answers are
// checked for shape so a fast error page cannot pass for a fast history.
//
// Forked by bench/run.mjs; driven over IPC (see bench/lib/rpc.mjs).
import { Pool } from 'undici';
import { Histogram, nowUs } from '../lib/histogram.mjs';
import { serveRpc } from '../lib/rpc.mjs';

async function run({
  origin,
  connections = 64,
  durationMs = 20_000,
  users,
  userPrefix = 'user',
  expectEntries,
}) {
  const pool = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const latency = new Histogram();
  const statuses = {};
  const errors = {};
  let bytes = 0;
  let checked = 0;
  let mismatches = 0;
  const started = Date.now();
  const deadline = started + durationMs;
  const loop = async () => {
    while (Date.now() < deadline) {
      const user = `${userPrefix}${Math.floor(Math.random() * users)}`;
      const t0 = nowUs();
      try {
        const res = await pool.request({
          path: `/api/users/${user}/prevnames`,
          method: 'GET',
          headersTimeout: 30_000,
          bodyTimeout: 30_000,
        });
        const text = await res.body.text();
        latency.record(nowUs() - t0);
        bytes += text.length;
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        if (checked < 100) {
          checked++;
          const body = JSON.parse(text);
          if (
            res.statusCode !== 200 ||
            body.userId !== user ||
            !Array.isArray(body.prevnames) ||
            (expectEntries !== undefined && body.prevnames.length !== expectEntries)
          ) {
            mismatches++;
          }
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
    bytes,
    checked,
    mismatches,
    latency: latency.toJSON(),
  };
}

serveRpc({ run });
