// `npm run test:image`: builds the production image's tree from the Dockerfile
// (scripts/image-tree.mjs) in a temporary directory, runs its smoke (test/image/) on it, and
// removes it. With IMAGE_TREE set to a tree built before, runs the smoke on that one instead.
// Arguments are jest's.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const node = (args, env = process.env) =>
  spawnSync(process.execPath, args, { cwd: root, env, stdio: 'inherit' });
const seconds = (since) => ((Date.now() - since) / 1000).toFixed(1);

let tree = process.env.IMAGE_TREE;
let temp;
if (!tree) {
  // Under the system's temporary directory: no node_modules above it for Node to fall back on.
  temp = mkdtempSync(join(tmpdir(), 'image-tree-'));
  tree = join(temp, 'app');
  const started = Date.now();
  const built = node([join(root, 'scripts/image-tree.mjs'), tree]);
  console.log(`test:image: the tree took ${seconds(started)} s`);
  if (built.status !== 0) {
    rmSync(temp, { recursive: true, force: true });
    process.exit(built.status ?? 1);
  }
}
const started = Date.now();
const smoke = node(
  [
    '--experimental-vm-modules',
    '--no-warnings=ExperimentalWarning',
    'node_modules/jest/bin/jest.js',
    '--config',
    'test/image/jest.config.js',
    ...process.argv.slice(2),
  ],
  { ...process.env, IMAGE_TREE: tree },
);
console.log(`test:image: the smoke took ${seconds(started)} s`);
if (temp) rmSync(temp, { recursive: true, force: true });
process.exit(smoke.status ?? 1);
