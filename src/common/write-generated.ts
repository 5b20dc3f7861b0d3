import { existsSync, readFileSync, writeFileSync } from 'node:fs';

/**
 * What `npm run docs` and `npm run openapi` end with: writes each generated file whose text
 * changed, or with `--check` only compares, and fails naming the stale ones.
 */
export function writeGenerated(files: ReadonlyMap<string, string>, command: string): void {
  const stale = [...files].filter(
    ([path, text]) => !existsSync(path) || readFileSync(path, 'utf8') !== text,
  );
  if (!process.argv.includes('--check')) {
    for (const [path, text] of stale) writeFileSync(path, text);
    return;
  }
  if (stale.length > 0) {
    const names = stale.map(([path]) => path).join(' and ');
    process.stderr.write(`${names} stale: run \`${command}\` and commit the result\n`);
    process.exit(1);
  }
}
