#!/usr/bin/env node
// A module's migration, named, formatted and listed in its folder's migrations/index.ts:
//
//   npm run migration:generate -- <folder> <kebab-name>   the SQL from its entities' changes
//   npm run migration:create -- <folder> <kebab-name>     an empty one, to write by hand
//
// `generate` compares the entities with a database at this tree's migrations: it runs them
// first on DATABASE_URL, which must be a scratch database (the TypeORM CLI on dist/).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [command, folder, name] = process.argv.slice(2);
const fail = (message) => {
  console.error(`migration: ${message}`);
  process.exit(1);
};
if (!['generate', 'create'].includes(command) || !folder || !name) {
  fail('usage: node scripts/migration.mjs generate|create <folder of src/> <kebab-name>');
}
if (!/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/.test(name)) fail(`${name}: a kebab-case name, please`);
if (!existsSync(join('src', folder, `${folder}.module.ts`))) {
  fail(`src/${folder}/${folder}.module.ts: no such module`);
}

const dir = join('src', folder, 'migrations');
const timestamp = Date.now();
const className = `${name.replace(/(^|-)([a-z0-9])/g, (_, __, c) => c.toUpperCase())}${timestamp}`;
const file = join(dir, `${timestamp}-${name}.ts`);
const typeorm = (...args) =>
  execFileSync('npx', ['typeorm', ...args, '-d', 'dist/database/data-source.js'], {
    stdio: 'inherit',
  });

if (command === 'generate') {
  if (!process.env.DATABASE_URL) fail('set DATABASE_URL to a scratch database');
  typeorm('migration:run');
  typeorm('migration:generate', join(dir, name), '--pretty', '-t', String(timestamp));
  if (!existsSync(file)) fail('no migration written (no change of the entities?)');
  // The repository's lint wants type-only imports.
  writeFileSync(
    file,
    readFileSync(file, 'utf8').replace(
      'import { MigrationInterface, QueryRunner } from "typeorm";',
      "import type { MigrationInterface, QueryRunner } from 'typeorm';",
    ),
  );
} else {
  execFileSync('mkdir', ['-p', dir]);
  writeFileSync(
    file,
    `import type { MigrationInterface, QueryRunner } from 'typeorm';

export class ${className} implements MigrationInterface {
  name = '${className}';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(\`\`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(\`\`);
  }
}
`,
  );
}

// The index lists the migrations by hand: the same array serves the ts and js builds.
const index = join(dir, 'index.ts');
const migrations = readdirSync(dir)
  .filter((each) => /^\d+-.+\.ts$/.test(each))
  .sort()
  .map((each) => {
    const source = readFileSync(join(dir, each), 'utf8');
    const [, exported] = /export class (\w+)/.exec(source) ?? fail(`${each}: no exported class`);
    return { exported, from: `./${each.replace(/\.ts$/, '.js')}` };
  });
const listed = existsSync(index) ? readFileSync(index, 'utf8') : '';
const arrayName =
  /export const (\w+)\s*=/.exec(listed)?.[1] ??
  `${folder.replace(/-([a-z0-9])/g, (_, c) => c.toUpperCase())}Migrations`;
const comment =
  /\/\*\*[\s\S]*?\*\/\n(?=export const)/.exec(listed)?.[0] ??
  `/** The ${folder} module's migrations (listed by hand: the same array serves the ts and js builds). */\n`;
writeFileSync(
  index,
  `${migrations.map(({ exported, from }) => `import { ${exported} } from '${from}';`).join('\n')}

${comment}export const ${arrayName} = [${migrations.map(({ exported }) => exported).join(', ')}];
`,
);
execFileSync('npx', ['prettier', '--write', file, index], { stdio: 'inherit' });
console.log(`${file}: listed in ${index} as part of ${arrayName}`);
if (migrations.length === 1) {
  console.log(`Declare it on the module: @Owns({ migrations: ${arrayName}, … })`);
}
