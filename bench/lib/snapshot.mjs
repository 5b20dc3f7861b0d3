// A private copy of the built service for the length of a run, outside the repository:
// dist/ beside a copy of package.json (dist reads ../../package.json) and a link to
// node_modules, so a rebuild in the working tree cannot pull files from under a server.
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Waits (at most 60 s) for dist/main.js to exist and dist/ to stop changing, then copies it. */
export async function snapshotDist(root) {
  const main = join(root, 'dist', 'main.js');
  let lastMtime = -1;
  for (let i = 0; i < 60; i++) {
    if (existsSync(main)) {
      const mtime = statSync(join(root, 'dist')).mtimeMs + statSync(main).mtimeMs;
      if (mtime === lastMtime) {
        break;
      }
      lastMtime = mtime;
    }
    await sleep(1_000);
  }
  if (!existsSync(main)) {
    throw new Error('dist/main.js does not exist: run "npm run build" (or pass --build)');
  }
  const dir = mkdtempSync(join(tmpdir(), `name-history-bench-${process.pid}-`));
  cpSync(join(root, 'dist'), join(dir, 'dist'), { recursive: true });
  cpSync(join(root, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return {
    dir,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Removes the copies left by runs that died without cleaning up. */
export function removeStaleSnapshots() {
  let removed = 0;
  for (const name of readdirSync(tmpdir())) {
    const pid = Number(/^name-history-bench-(\d+)-/.exec(name)?.[1]);
    if (pid && pid !== process.pid && !isAlive(pid)) {
      rmSync(join(tmpdir(), name), { recursive: true, force: true });
      removed++;
    }
  }
  return removed;
}

export function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}
