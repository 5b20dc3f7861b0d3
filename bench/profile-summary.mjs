#!/usr/bin/env node
// node bench/profile-summary.mjs FILE.cpuprofile [--top N]
// The functions with the most self time in a V8 CPU profile (as written by --cpu-prof, e.g.
// `npm run bench -- --profile`), and self time per package / file, as plain text.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '25' } },
  allowPositionals: true,
});
if (positionals.length !== 1) {
  process.stderr.write('usage: node bench/profile-summary.mjs FILE.cpuprofile [--top N]\n');
  process.exit(2);
}
const top = Number(values.top);
const profile = JSON.parse(readFileSync(positionals[0], 'utf8'));

// Self time per node: the sampling interval attributed to the node each sample landed on.
const byId = new Map(profile.nodes.map((node) => [node.id, { node, selfUs: 0 }]));
const deltas = profile.timeDeltas ?? [];
profile.samples.forEach((id, i) => {
  const entry = byId.get(id);
  if (entry) {
    entry.selfUs += deltas[i] ?? 0;
  }
});

const totalUs = [...byId.values()].reduce((s, e) => s + e.selfUs, 0);
const fns = new Map();
const places = new Map();
for (const { node, selfUs } of byId.values()) {
  const cf = node.callFrame;
  const where = cf.url ? cf.url.replace(/^file:\/\//, '') : `(${cf.functionName || 'native'})`;
  const key = `${cf.functionName || '(anonymous)'}  ${where}:${cf.lineNumber + 1}`;
  fns.set(key, (fns.get(key) ?? 0) + selfUs);
  const pkg =
    /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(where)?.[1] ??
    (where.startsWith('(') ? where : where.replace(/.*\/(dist|bench|src)\//, '$1/'));
  places.set(pkg, (places.get(pkg) ?? 0) + selfUs);
}

const pct = (us) => `${((us / totalUs) * 100).toFixed(1).padStart(5)} %`;
const print = (title, map) => {
  process.stdout.write(`\n${title}\n`);
  for (const [key, us] of [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${pct(us)}  ${(us / 1000).toFixed(0).padStart(7)} ms  ${key}\n`);
  }
};
process.stdout.write(`${positionals[0]}: ${(totalUs / 1e6).toFixed(2)} s sampled\n`);
print('Self time by function', fns);
print('Self time by package / file', places);

// Who calls the heaviest functions: their self time by the chain of the 6 callers above them.
const parentOf = new Map();
for (const node of profile.nodes) {
  for (const child of node.children ?? []) {
    parentOf.set(child, node.id);
  }
}
const frame = (cf) =>
  `${cf.functionName || '(anonymous)'}@${cf.url.split('/').slice(-2).join('/')}:${cf.lineNumber + 1}`;
const heavy = [...byId.values()]
  .filter(
    ({ node }) =>
      !['(idle)', '(program)', '(garbage collector)', '(root)'].includes(
        node.callFrame.functionName,
      ),
  )
  .sort((a, b) => b.selfUs - a.selfUs)
  .slice(0, Math.min(top, 8));
process.stdout.write('\nHeaviest call sites (self time <- callers)\n');
for (const { node, selfUs } of heavy) {
  const chain = [];
  for (
    let id = parentOf.get(node.id), k = 0;
    id !== undefined && k < 6;
    id = parentOf.get(id), k++
  ) {
    chain.push(frame(byId.get(id).node.callFrame));
  }
  process.stdout.write(`${pct(selfUs)}  ${frame(node.callFrame)} <- ${chain.join(' <- ')}\n`);
}
