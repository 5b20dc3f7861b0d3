/**
 * The module boundaries of src/, checked by `npm run lint` (dependency-cruiser).
 *
 * A feature folder uses another only through that folder's public file, its `index.ts`: the
 * Nest module and what the module exports (services, repositories, guards, decorators, the
 * domain's types and events). Everything else in a folder is its own business. `common/`,
 * `config/` and `platform/` (the adaptations of Express, Node's HTTP server and Nest) are
 * shared by all.
 *
 * And what ships: the service imports only packages in package.json's `dependencies`, the
 * ones the image keeps (`npm run test:image` runs that tree).
 */
/** A folder's public file: what it offers the others, and all they may import of it. */
const PUBLIC_FILE = '^src/[^/]+/index[.]ts$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'feature-internals',
      severity: 'error',
      comment:
        "A feature folder imports another one's internals: use what that folder's module exports (see CONTRIBUTING.md).",
      from: { path: '^src/([^/]+)/', pathNot: '[.]spec[.]ts$' },
      to: {
        path: '^src/([^/]+)/',
        pathNot: ['^src/$1/', '^src/(common|config|platform)/', PUBLIC_FILE],
      },
    },
    {
      name: 'shared-stays-shared',
      severity: 'error',
      comment:
        'common/, config/ and platform/ hold nothing feature-specific: they import no feature folder.',
      from: { path: '^src/(common|config|platform)/' },
      to: { path: '^src/', pathNot: '^src/(common|config|platform)/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules that import each other, directly or not.',
      from: { path: '^src/' },
      // Through imports that load code: a type-only import is erased by the build.
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'src-not-from-tests',
      severity: 'error',
      comment:
        'The service never imports test or benchmark code (unit specs may use test support).',
      from: { path: '^src/', pathNot: '[.]spec[.]ts$' },
      to: { path: '^(test|bench)/' },
    },
    {
      name: 'runtime-dependencies-only',
      severity: 'error',
      comment:
        "The service imports a package that is not in package.json's dependencies: the image's `npm prune --omit=dev` removes it, and the import fails in production. Move it to dependencies (see CONTRIBUTING.md).",
      from: { path: '^src/', pathNot: '[.]spec[.]ts$' },
      to: {
        // npm-dev: a devDependency; npm-no-pkg: installed only as another package's
        // dependency (it may vanish or change major with it); npm-unknown: no package.json
        // to tell; optional and peer dependencies may be absent from a production install.
        dependencyTypes: ['npm-dev', 'npm-no-pkg', 'npm-unknown', 'npm-optional', 'npm-peer'],
        // A type-only import (`import type`, or every name in it marked `type`) is erased
        // when tsc builds, in the image's build stage, which has the devDependencies: nothing
        // of it is loaded at run time, so a dev package's types (`@types/...`, or a dev
        // tool's own) may be used that way. An import of values used only as types is erased
        // too, but counts here: mark it `type` (dependency-cruiser errs on the failing side).
        dependencyTypesNot: ['type-only'],
      },
    },
    {
      name: 'resolvable-imports',
      severity: 'error',
      comment:
        'The service imports a module that is not installed: add the package to dependencies.',
      from: { path: '^src/', pathNot: '[.]spec[.]ts$' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
