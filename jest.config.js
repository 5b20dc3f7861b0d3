// Jest runs the ESM build of the code (NestJS 12 ships ES modules only): start it through
// the npm scripts, which pass --experimental-vm-modules. Two projects: `unit` (the specs
// beside the code, src/**/*.spec.ts, which may fake I/O) and `e2e` (test/**/*.e2e-spec.ts,
// the real app over HTTP with real Postgres and Redis). test/image/ has a config of its own.
const typescript = {
  testEnvironment: 'node',
  rootDir: '.',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
  setupFiles: ['<rootDir>/test/support/jest-preload.mjs'],
};

/** @type {import('jest').Config} */
export default {
  projects: [
    {
      ...typescript,
      displayName: 'unit',
      roots: ['<rootDir>/src'],
      testMatch: ['<rootDir>/src/**/*.spec.ts'],
    },
    {
      ...typescript,
      displayName: 'e2e',
      roots: ['<rootDir>/test'],
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      // The production tree's smoke needs the tree built first: `npm run test:image`.
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/image/'],
    },
  ],
  testTimeout: 30000,
  maxWorkers: 2,
};
