import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SCRIPT = 'scripts/check-node.mjs';
const [major, minor, patch] = process.versions.node.split('.').map(Number);
const found = `v${process.versions.node}`;

/** Runs the check with this Node, from a copy of the project whose "engines" say `range`. */
function check(range: string, nvmrc?: string) {
  const root = mkdtempSync(join(tmpdir(), 'node-check-'));
  try {
    mkdirSync(join(root, 'scripts'));
    copyFileSync(SCRIPT, join(root, SCRIPT));
    writeFileSync(
      join(root, 'package.json'),
      JSON.stringify({ name: 'svc', engines: { node: range } }),
    );
    if (nvmrc !== undefined) writeFileSync(join(root, '.nvmrc'), `${nvmrc}\n`);
    const run = spawnSync(process.execPath, [join(root, SCRIPT)], { encoding: 'utf8' });
    return { status: run.status, stdout: run.stdout, stderr: run.stderr };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** `npm start` and `npm test` run scripts/check-node.mjs first (docs/operations.md, "Running it"). */
describe('the Node version check before npm start', () => {
  it('passes silently on the Node this suite runs on, with the real package.json', () => {
    const run = spawnSync(process.execPath, [SCRIPT], { encoding: 'utf8' });
    expect(run).toMatchObject({ status: 0, stdout: '', stderr: '' });
  });

  it('says in one line which Node is needed, and what to do', () => {
    expect(check('^20.19.0', '24')).toEqual({
      status: 1,
      stdout: '',
      stderr: `svc needs Node ^20.19.0 (found ${found}): nvm use (see .nvmrc: 24)\n`,
    });
    expect(check('>=99.0.0').stderr).toBe(`svc needs Node >=99.0.0 (found ${found})\n`);
  });

  it.each([
    [`^${major}.0.0`, true],
    [`^${major}.${minor}.${patch}`, true],
    [`^${major + 1}.0.0`, false],
    [`~${major}.${minor}.0`, true],
    [`~${major}.${minor + 1}.0`, false],
    [`>=${major}.${minor}.${patch}`, true],
    [`>${major}.${minor}.${patch}`, false],
    [`<=${major}.${minor}.${patch}`, true],
    [`<${major}.${minor}.${patch}`, false],
    [`${major}.${minor}.${patch}`, true],
    [`>=${major} <${major + 1}`, true],
    [`>=${major} <${major}.${minor}.${patch}`, false],
    [`^${major - 2}.13.0 || >=${major}.0.0`, true],
    [`^${major - 2}.13.0 || >=${major + 1}.0.0`, false],
  ])('reads "%s" as npm does: %s', (range, passes) => {
    expect(check(range).status).toBe(passes ? 0 : 1);
  });
});
