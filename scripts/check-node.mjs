// Run before `npm start` and `npm test` (package.json "prestart", "pretest"): on a Node outside
// package.json's "engines", one line saying which Node the service needs, instead of a build or
// a start that fails further on with something less clear. No dependency and no newer syntax:
// it has to run on the Node that is wrong.
import { readFileSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const { name, engines } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
const range = engines.node;
const found = process.versions.node;

if (!satisfies(found, range)) {
  let nvmrc = '';
  try {
    nvmrc = readFileSync(new URL('.nvmrc', root), 'utf8').trim();
  } catch {
    // No .nvmrc: the range says it all.
  }
  const advice = nvmrc ? `: nvm use (see .nvmrc: ${nvmrc})` : '';
  console.error(`${name} needs Node ${range} (found v${found})${advice}`);
  process.exit(1);
}

/**
 * Whether `version` is in `range`, as npm reads "engines": comparator sets joined by `||`, each
 * a list of comparators (`^`, `~`, `>=`, `>`, `<=`, `<`, `=` or none) that must all hold.
 */
function satisfies(version, range) {
  const v = parse(version);
  return range.split('||').some((set) =>
    set
      .trim()
      .split(/\s+/)
      .every((comparator) => holds(v, comparator)),
  );
}

function parse(text) {
  const parts = text
    .replace(/^v/, '')
    .split('.')
    .map((part) => Number.parseInt(part, 10) || 0);
  return [parts[0] || 0, parts[1] || 0, parts[2] || 0];
}

function compare(a, b) {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

function holds(v, comparator) {
  const [, operator = '', bound] = /^(\^|~|>=|>|<=|<|=)?\s*(.+)$/.exec(comparator);
  const w = parse(bound);
  const order = compare(v, w);
  switch (operator) {
    case '^': // the same leftmost non-zero part
      if (w[0] > 0) return order >= 0 && v[0] === w[0];
      if (w[1] > 0) return order >= 0 && v[0] === 0 && v[1] === w[1];
      return order === 0;
    case '~':
      return order >= 0 && v[0] === w[0] && v[1] === w[1];
    case '>=':
      return order >= 0;
    case '>':
      return order > 0;
    case '<=':
      return order <= 0;
    case '<':
      return order < 0;
    default:
      return order === 0;
  }
}
