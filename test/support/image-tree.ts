import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { ServiceProcess } from './service-process.js';

/**
 * The production image's file tree, as scripts/image-tree.mjs builds it from the Dockerfile
 * (`npm run test:image` builds one and names it in IMAGE_TREE): its directory (the image's
 * WORKDIR) and the configuration beside it, `<dir>.image.json` (ENV, CMD, ...).
 */
export interface ImageTree {
  dir: string;
  /** The image's ENV. */
  env: Record<string, string>;
  /** The image's CMD, run in `dir`. */
  command: string[];
  /** The image's HEALTHCHECK command, if it has one. */
  healthcheck?: string[];
}

/** The tree IMAGE_TREE names; throws when there is none (a smoke without it must not pass). */
export function imageTree(): ImageTree {
  const dir = process.env.IMAGE_TREE;
  if (!dir || !isAbsolute(dir) || !existsSync(join(dir, 'package.json'))) {
    throw new Error(
      `IMAGE_TREE must name a tree built by scripts/image-tree.mjs (got ${JSON.stringify(dir)}): run \`npm run test:image\``,
    );
  }
  const config = JSON.parse(readFileSync(`${dir}.image.json`, 'utf8')) as {
    Env: string[];
    Cmd: string[];
    Healthcheck?: { Test: string[] };
  };
  const env = Object.fromEntries(
    config.Env.map((entry) => [
      entry.slice(0, entry.indexOf('=')),
      entry.slice(entry.indexOf('=') + 1),
    ]),
  );
  return { dir, env, command: config.Cmd, healthcheck: config.Healthcheck?.Test };
}

/**
 * The `node_modules` folders above `dir`, where Node would look for a package `dir` lacks:
 * none, for a tree that stands alone as the image's does.
 */
export function nodeModulesAbove(dir: string): string[] {
  const found: string[] = [];
  for (let up = dirname(dir); ; up = dirname(up)) {
    if (existsSync(join(up, 'node_modules'))) found.push(join(up, 'node_modules'));
    if (dirname(up) === up) return found;
  }
}

/**
 * The service from the tree, as the image starts it: its CMD in its directory, with its ENV
 * and then `env` (as `docker run -e` adds to the image's), ready.
 */
export function startImageTree(tree: ImageTree, env: Record<string, string>) {
  return ServiceProcess.start({ ...tree.env, ...env }, { tree });
}

/**
 * Runs the image's HEALTHCHECK in the tree, as Docker runs it in the container (its ENV, the
 * instance's PORT): resolves with its exit code.
 */
export function healthcheck(tree: ImageTree, port: number): Promise<number | null> {
  if (!tree.healthcheck) throw new Error('The image has no HEALTHCHECK');
  const [program, ...args] = tree.healthcheck;
  const child = spawn(program === 'node' ? process.execPath : program, args, {
    cwd: tree.dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...tree.env, PORT: String(port) },
    stdio: 'ignore',
  });
  return new Promise((resolve) => child.once('close', (code) => resolve(code)));
}
