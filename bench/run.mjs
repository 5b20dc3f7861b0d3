#!/usr/bin/env node
// npm run bench [-- --quick] [--scenario NAME] [--soak [--soak-minutes N]] …
//
// Runs each scenario against the built service and then against the sides it is compared
// with: the raw-Node baseline (bench/baseline/server.mjs) writing with res.write, the same
// baseline writing to the socket, and nchan (nginx's pub/sub module) in the fan-out and
// memory scenarios. Postgres and Redis are shared, each run gets a database and a Redis
// prefix of its own. Prints one JSON line per scenario on stdout and one markdown table on
// stderr, and writes the table into BENCHMARKS.md (full runs, or --write).
// `node bench/run.mjs --help` lists the options.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Postgres, deleteRedisPrefix, deleteStaleRedisKeys, redisInfo } from './lib/db.mjs';
import { ForeignCpuMonitor, waitForQuiet } from './lib/foreign-cpu.mjs';
import { Instance } from './lib/harness.mjs';
import { NchanInstance, findNchan } from './lib/nchan.mjs';
import { LocalRedisCluster } from './lib/redis-cluster.mjs';
import { installExitHooks, isExiting } from './lib/procs.mjs';
import { removeStaleSnapshots, snapshotDist } from './lib/snapshot.mjs';
import {
  SIDES,
  medianOfRounds,
  renderMarkdown,
  renderNotes,
  scenarioRecord,
  updateBenchmarksFile,
} from './lib/report.mjs';
import { SCENARIOS, SOAK } from './scenarios/index.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const HELP = `Usage: node bench/run.mjs [options]

  --quick                 every scenario at a small size (under a minute in all)
  --scenario NAME         run only NAME (repeatable, or comma-separated): ${SCENARIOS.map((s) => s.name).join(', ')}
  --soak                  run the soak scenario only (5,000 listeners, 10 events/s, 10 min per target)
  --soak-minutes N        soak length per target (default 10; 0.5 with --quick)
  --only SIDE[,SIDE]      run these sides only: service, baseline (res.write),
                          baseline-socket (socket writes), baseline-nest (the
                          smallest Nest @Sse() and @Get() routes, fan-out paced and
                          history only), nchan
  --target-cmd "CMD"      how to start the service (default "node dist/main.js"); a command
                          starting with "node" gets the memory/event-loop probe loaded
  --baseline-cmd "CMD"    how to start both baselines (default "node bench/baseline/server.mjs",
                          with BASELINE_WRITE=res, socket or nest)
  --nginx PATH            nginx for the nchan side (default /usr/sbin/nginx); nginx and
                          libnginx-mod-nchan are installed with apt-get when missing, except
                          with --quick; without them the nchan side is skipped, with a note
  --build                 run "npm run build" first
  --profile               write a V8 CPU profile of every server to bench/results/profiles/
                          (summarise one with: node bench/profile-summary.mjs FILE)
  --no-snapshot           run dist/ in place instead of from a private copy taken at start
  --durable-commit        keep synchronous_commit on in the bench databases (default: off,
                          so disk-flush jitter does not swing the publish figures)
  --write / --no-write    write the table into BENCHMARKS.md (default: full runs of every scenario)
  --pg URL                admin URL of Postgres (default postgres://postgres@127.0.0.1:5432/postgres)
  --redis URL             Redis URL (default redis://127.0.0.1:6379)
  --redis-cluster         run the service on a Redis Cluster instead (REDIS_CLUSTER_NODES):
                          six local redis-server processes in cluster mode, started and
                          stopped by the bench; the service side only, the two-instances
                          scenario unless --scenario says otherwise; BENCHMARKS.md untouched
  --wait-quiet SECONDS    before each run, wait up to this long for other processes to
                          calm down (default 20; 0 with --quick); busy runs are flagged
  --rounds N              run each scenario N times, the sides in alternating order, and
                          report each figure's median (default: the scenario's own, 3 for
                          history and publish; always 1 with --quick and --soak)
  --verbose               echo the servers' and load processes' output
`;

const { values: opts } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    scenario: { type: 'string', multiple: true, default: [] },
    soak: { type: 'boolean', default: false },
    'soak-minutes': { type: 'string' },
    only: { type: 'string' },
    nginx: { type: 'string', default: '/usr/sbin/nginx' },
    'target-cmd': { type: 'string', default: 'node dist/main.js' },
    'baseline-cmd': { type: 'string', default: 'node bench/baseline/server.mjs' },
    build: { type: 'boolean', default: false },
    'durable-commit': { type: 'boolean', default: false },
    'no-snapshot': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    write: { type: 'boolean' },
    'no-write': { type: 'boolean', default: false },
    pg: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    'redis-cluster': { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
    'wait-quiet': { type: 'string' },
    rounds: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});

if (opts.help) {
  process.stdout.write(HELP);
  process.exit(0);
}

function die(message) {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}

for (const url of [opts.pg, opts.redis]) {
  const host = new URL(url).hostname;
  if (!/^127\.\d+\.\d+\.\d+$/.test(host) && host !== 'localhost') {
    die(`only loopback targets are allowed, not ${host}`);
  }
}
// The baselines speak classic pub/sub to one Redis: on a cluster, the service alone.
const only = opts['redis-cluster'] ? ['service'] : opts.only?.split(',').filter(Boolean);
for (const side of only ?? []) {
  if (!SIDES.some((s) => s.name === side)) {
    die(`--only takes sides among ${SIDES.map((s) => s.name).join(', ')}, not ${side}`);
  }
}
const soakMinutes = opts['soak-minutes'] === undefined ? undefined : Number(opts['soak-minutes']);
if (soakMinutes !== undefined && !(soakMinutes > 0 && soakMinutes <= 120)) {
  die('--soak-minutes takes a number of minutes in (0, 120]');
}

const waitQuietMs = Number(opts['wait-quiet'] ?? (opts.quick ? 0 : 20)) * 1000;
const roundsOpt = opts.rounds === undefined ? undefined : Number(opts.rounds);
if (roundsOpt !== undefined && !(Number.isInteger(roundsOpt) && roundsOpt >= 1)) {
  die('--rounds takes a whole number of at least 1');
}
if (!(waitQuietMs >= 0 && waitQuietMs <= 600_000)) {
  die('--wait-quiet takes seconds in [0, 600]');
}

const wanted = opts.scenario.flatMap((s) => s.split(',')).filter(Boolean);
const known = [...SCENARIOS, SOAK];
for (const name of wanted) {
  if (!known.some((s) => s.name === name)) {
    die(`unknown scenario ${name}; known: ${known.map((s) => s.name).join(', ')}`);
  }
}
const scenarios = opts.soak
  ? [SOAK]
  : wanted.length
    ? known.filter((s) => wanted.includes(s.name))
    : opts['redis-cluster']
      ? SCENARIOS.filter((s) => s.name === 'two-instances')
      : SCENARIOS;

const baselineArgv = () => opts['baseline-cmd'].split(/\s+/).filter(Boolean);
/** The sides of the run; a scenario runs against those of them it lists in `sides`. */
const targets = [
  { name: 'service', argv: opts['target-cmd'].split(/\s+/).filter(Boolean) },
  { name: 'baseline', argv: baselineArgv(), env: { BASELINE_WRITE: 'res' } },
  { name: 'baseline-socket', argv: baselineArgv(), env: { BASELINE_WRITE: 'socket' } },
  { name: 'baseline-nest', argv: baselineArgv(), env: { BASELINE_WRITE: 'nest' } },
  { name: 'nchan', nchan: true },
].filter((t) => !only || only.includes(t.name));
const DEFAULT_SIDES = ['service', 'baseline'];

const log = (line) => process.stderr.write(`${line}\n`);
const postgres = new Postgres(opts.pg, { durableCommit: opts['durable-commit'] });
/** With --redis-cluster: the cluster the services run on. */
let redisCluster = null;
let runCounter = 0;
let seqCounter = 0;
let current = null;
const runStamp = new Date().toISOString().replace(/[:.]/g, '-');
const snapshots = [];

installExitHooks(async () => {
  await current?.cleanup();
  await stopSharedServers();
  await redisCluster?.stop();
  await postgres.dropAll();
  snapshots.forEach((s) => s.remove());
});

// --quick: one server per target, started once (keep-alive 1 s, as capacity needs) and used
// by every single-instance scenario, so the quick run is not mostly server start-up.
const QUICK_SERVER_ENV = { SSE_KEEPALIVE_MS: '1000' };
const shared = new Map();
const sharedPrefix = `bench_r${process.pid}_0`;

async function sharedServer(target) {
  let entry = shared.get(target.name);
  if (entry?.instance.child.alive) {
    return entry;
  }
  if (isExiting()) {
    throw new Error('the run is stopping');
  }
  const database = `${sharedPrefix}_${target.name.replace(/-/g, '_')}`;
  if (!entry) {
    await postgres.create(database);
  }
  const owned = [];
  const ctx = { ...baseContext(), redisPrefix: sharedPrefix, track: (x) => owned.push(x) };
  const instance = await Instance.start(ctx, target, { database, env: QUICK_SERVER_ENV });
  entry = { instance, database };
  shared.set(target.name, entry);
  return entry;
}

async function stopSharedServers() {
  for (const { instance, database } of shared.values()) {
    await instance.stop().catch(() => {});
    await postgres.drop(database).catch(() => {});
  }
  if (shared.size > 0) {
    await deleteRedisPrefix(opts.redis, sharedPrefix).catch(() => {});
  }
  shared.clear();
}

function baseContext() {
  return {
    root: ROOT,
    quick: opts.quick,
    profileDir: null,
    verbose: opts.verbose,
    postgres,
    redisUrl: opts.redis,
    redisClusterNodes: redisCluster?.seeds,
    log,
    pause: (ms) => sleep(ms),
  };
}

/** Everything one scenario run against one target owns, released by `cleanup()`. */
function runContext(scenarioName, targetName) {
  runCounter++;
  const id = `bench_r${process.pid}_${runCounter}`;
  const owned = [];
  const databases = [];
  let dbCounter = 0;
  const used = [];
  return {
    ...baseContext(),
    profileDir: opts.profile
      ? join(ROOT, 'bench', 'results', 'profiles', `${runStamp}-${scenarioName}-${targetName}`)
      : null,
    redisPrefix: id,
    track: (x) => owned.push(x),
    /**
     * The server of a single-instance scenario and its database: a fresh one (`env` applied)
     * in a full run, the target's shared one with --quick. nchan has no database, and starts
     * in a few milliseconds: always a fresh one.
     */
    async server(target, { env = {} } = {}) {
      if (target.nchan) {
        return { database: null, instance: await NchanInstance.start(this, target) };
      }
      if (opts.quick && !opts.profile) {
        const entry = await sharedServer(target);
        used.push(entry.instance);
        return entry;
      }
      const database = await this.newDatabase();
      return { database, instance: await Instance.start(this, target, { database, env }) };
    },
    /** A server that died during the scenario makes its figures meaningless: say so. */
    assertServersAlive(result) {
      for (const x of [...owned, ...used]) {
        if (x.child && x.port && !x.child.alive) {
          throw new Error(
            `${x.child.name} exited (${x.child.exitCode ?? x.child.exitSignal}) during the run:\n${x.child.output()}`,
          );
        }
      }
      return result;
    },
    nextSeq: (n) => {
      const first = seqCounter;
      seqCounter += n;
      return first;
    },
    async newDatabase() {
      if (isExiting()) {
        throw new Error('the run is stopping');
      }
      const name = `${id}_${++dbCounter}`;
      await postgres.create(name);
      databases.push(name);
      return name;
    },
    async cleanup() {
      // Load processes first (they hold the sockets), then the servers, then the data.
      for (const x of owned.reverse()) {
        await x.stop().catch(() => {});
      }
      owned.length = 0;
      for (const name of databases) {
        await postgres.drop(name).catch((e) => log(`  could not drop ${name}: ${e.message}`));
      }
      databases.length = 0;
      await deleteRedisPrefix(opts.redis, id).catch(() => {});
    },
  };
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${what} took longer than ${Math.round(ms / 1000)} s`)),
        ms,
      );
    }),
  ]).finally(() => clearTimeout(timer));
}

/** The version of an installed package (the one the service runs on), or 'unknown'. */
function installedVersion(name) {
  try {
    return JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8'))
      .version;
  } catch {
    return 'unknown';
  }
}

function machine(pgVersion, redisVersion) {
  const git = (...args) => {
    try {
      return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
    } catch {
      return '';
    }
  };
  const dirty = git('status', '--porcelain', '--', 'src', 'package.json', 'package-lock.json');
  let fdLimit = 'unknown';
  try {
    fdLimit = execFileSync('/bin/sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).trim();
  } catch {
    // keep unknown
  }
  return {
    date: new Date().toISOString(),
    commit: `${git('rev-parse', '--short', 'HEAD') || 'unknown'}${dirty ? ' (src modified)' : ''}`,
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model?.trim() ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    kernel: os.release(),
    node: process.version,
    nest: installedVersion('@nestjs/core'),
    postgres: pgVersion,
    redis: redisVersion,
    fdLimit,
    synchronousCommit: opts['durable-commit'] ? 'on' : 'off',
  };
}

/** "nginx 1.22.1 with nchan 1.3.6+dfsg-2, one worker", as far as the versions can be read. */
function nchanDisplay(nginx) {
  const nginxVersion = /nginx\/(\S+)/.exec(
    spawnSync(nginx, ['-v'], { encoding: 'utf8' }).stderr ?? '',
  )?.[1];
  const nchanVersion = spawnSync('dpkg-query', ['-W', '-f=${Version}', 'libnginx-mod-nchan'], {
    encoding: 'utf8',
  }).stdout?.replace(/^\d+:/, '');
  return `nginx ${nginxVersion ?? '(version unknown)'} with nchan ${nchanVersion || '(version unknown)'}, one worker`;
}

async function main() {
  const started = Date.now();
  if (opts.build) {
    log('bench: npm run build');
    const r = spawnSync('npm', ['run', 'build'], {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit'],
      timeout: 300_000,
    });
    if (r.status !== 0) {
      die('npm run build failed');
    }
  }
  for (const t of targets.filter((x) => x.nchan)) {
    const found = findNchan({ nginx: opts.nginx, install: !opts.quick, log });
    if (found.module) {
      Object.assign(t, found, { display: nchanDisplay(found.nginx) });
    } else {
      t.skipped = `${found.reason}${opts.quick ? ' (a full run installs nginx and libnginx-mod-nchan with apt-get when it can)' : ''}`;
      t.display = 'not available';
      log(`bench: the nchan side is skipped: ${t.skipped}`);
    }
  }
  for (const t of targets.filter((x) => !x.nchan)) {
    const env = Object.entries(t.env ?? {}).map(([k, v]) => `${k}=${v} `);
    t.display = `\`${env.join('')}${t.argv.join(' ')}\``;
    const i = t.argv.findIndex((a, k) => k > 0 && !a.startsWith('-'));
    const script = t.argv[i];
    if (t.argv[0] === 'node' && script && !existsSync(join(ROOT, script))) {
      die(
        `${t.name}: ${script} does not exist${t.name === 'service' ? ' (run "npm run build", or pass --build)' : ''}`,
      );
    }
    if (t.argv[0] === 'node' && /^(\.\/)?dist\//.test(script ?? '') && !opts['no-snapshot']) {
      // A build running beside the benchmark replaces dist/ under the servers' feet: run a copy.
      const snapshot = await snapshotDist(ROOT);
      t.argv[i] = join(snapshot.dir, script);
      t.cwd = snapshot.dir;
      snapshots.push(snapshot);
    }
  }
  if (opts['redis-cluster']) {
    redisCluster = await LocalRedisCluster.start({ echo: opts.verbose });
    log(`bench: a local Redis Cluster of six nodes: ${redisCluster.seeds}`);
  }
  const [pgVersion, redisVersion] = await Promise.all([
    postgres.version(),
    redisCluster
      ? redisCluster.version().then((v) => `${v} (cluster: 3 masters, 3 replicas)`)
      : redisInfo(opts.redis),
  ]);
  const stale = await postgres.dropStale();
  const staleKeys = await deleteStaleRedisKeys(opts.redis);
  const staleCopies = removeStaleSnapshots();
  if (stale.length || staleKeys || staleCopies) {
    log(
      `bench: removed what earlier runs left: ${stale.length} database(s), ${staleKeys} Redis key(s), ${staleCopies} dist cop(ies)`,
    );
  }
  const info = machine(pgVersion, redisVersion);
  const mode = opts.soak ? 'soak' : opts.quick ? 'quick' : 'full';
  log(
    `bench: ${mode} run of ${scenarios.map((s) => s.name).join(', ')} on ${info.cpus} CPUs, node ${info.node}, commit ${info.commit}`,
  );

  const records = [];
  let failed = 0;
  for (const scenario of scenarios) {
    const params = scenario.size(opts.quick, { soakMinutes });
    const sides = targets.filter((t) => (scenario.sides ?? DEFAULT_SIDES).includes(t.name));
    const rounds = opts.quick || opts.soak ? 1 : (roundsOpt ?? scenario.rounds ?? 1);
    const runs = Object.fromEntries(sides.map((t) => [t.name, []]));
    for (let round = 0; round < rounds; round++) {
      // Every other round in the opposite order, so a machine that drifts over the run
      // favours no side.
      for (const target of round % 2 ? [...sides].reverse() : sides) {
        if (isExiting()) {
          return 1;
        }
        if (target.skipped) {
          runs[target.name].push({ skipped: target.skipped });
          continue;
        }
        const roundText = rounds > 1 ? ` (round ${round + 1} of ${rounds})` : '';
        log(`bench: ${scenario.name} → ${target.name}${roundText} ${JSON.stringify(params)}`);
        const ctx = runContext(scenario.name, target.name);
        current = ctx;
        const budgetMs =
          scenario === SOAK
            ? (params.minutes * 60 + 180) * 1000
            : opts.quick
              ? 60_000
              : (scenario.budgetMs ?? (scenario.name === 'capacity' ? 400_000 : 240_000));
        const quiet = await waitForQuiet(waitQuietMs);
        const monitor = new ForeignCpuMonitor().start();
        const t0 = Date.now();
        const results = {};
        try {
          results[target.name] = await withTimeout(
            scenario.run(ctx, target, params).then((r) => ctx.assertServersAlive(r)),
            budgetMs,
            `${scenario.name} on ${target.name}`,
          );
        } catch (error) {
          failed++;
          results[target.name] = {
            error: String(error?.message ?? error)
              .split('\n')
              .slice(0, 6)
              .join(' | '),
          };
        } finally {
          const load = monitor.stop();
          results[target.name].foreignCpuPct = load.foreignCpuPct;
          results[target.name].foreignCpuTop = load.top;
          results[target.name].foreignCpuPctBefore = quiet.foreignCpuPct;
          await ctx.cleanup();
          current = null;
        }
        log(
          `bench:   ${target.name} done in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${JSON.stringify(results[target.name])}`,
        );
        runs[target.name].push(results[target.name]);
      }
    }
    const results = Object.fromEntries(
      Object.entries(runs).map(([side, list]) => [side, medianOfRounds(list, scenario.metrics)]),
    );
    const record = scenarioRecord(scenario, mode, params, results);
    records.push(record);
    process.stdout.write(`${JSON.stringify(record)}\n`);
  }

  const elapsedS = Math.round((Date.now() - started) / 1000);
  const run = { info, mode, records, scenarios, elapsedS, targets };
  const markdown = renderMarkdown(run);
  const notes = renderNotes(run);
  log(`\n${markdown}\n${notes.length ? `\n${notes.join('\n')}\n` : ''}`);
  log('Every figure of every run is in the JSON lines (stdout, and `bench/results/*.jsonl`).');

  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  const stamp = info.date.replace(/[:.]/g, '-');
  writeFileSync(
    join(ROOT, 'bench', 'results', `${stamp}-${mode}.jsonl`),
    [
      JSON.stringify({ machine: info, mode, elapsedS }),
      ...records.map((r) => JSON.stringify(r)),
    ].join('\n') + '\n',
  );
  const allScenarios = scenarios.length === (opts.soak ? 1 : SCENARIOS.length);
  const write = opts['no-write']
    ? false
    : redisCluster
      ? (opts.write ?? false)
      : (opts.write ??
        (!opts.quick &&
          allScenarios &&
          DEFAULT_SIDES.every((s) => targets.some((t) => t.name === s))));
  if (write) {
    const file = join(ROOT, 'BENCHMARKS.md');
    let text = updateBenchmarksFile(
      existsSync(file) ? readFileSync(file, 'utf8') : '',
      mode,
      markdown,
    );
    try {
      // The repository's `prettier --check .` covers this file: write it formatted.
      const prettier = await import('prettier');
      text = await prettier.format(text, {
        ...(await prettier.resolveConfig(file)),
        filepath: file,
      });
    } catch (error) {
      log(`bench: could not format BENCHMARKS.md with prettier: ${error.message}`);
    }
    writeFileSync(file, text);
    log(`bench: wrote the ${mode} table into BENCHMARKS.md`);
  }
  await stopSharedServers();
  await redisCluster?.stop();
  redisCluster = null;
  snapshots.forEach((s) => s.remove());
  log(`bench: finished in ${elapsedS} s${failed ? `, ${failed} scenario run(s) failed` : ''}`);
  return failed ? 1 : 0;
}

main().then(
  // Exit explicitly: nothing of the run may linger (the exit hook kills any child left).
  // When a signal is being handled, its hook finishes the cleanup and exits.
  (code) => {
    if (!isExiting()) {
      process.exit(code);
    }
  },
  async (error) => {
    log(`bench: ${error?.stack ?? error}`);
    await current?.cleanup().catch(() => {});
    await postgres.dropAll().catch(() => {});
    process.exit(1);
  },
);
