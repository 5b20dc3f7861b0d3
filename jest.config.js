// Jest runs the ESM build of the code (NestJS 12 ships ES modules only): start it through
// `npm test`, which passes --experimental-vm-modules.
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  rootDir: '.',
  roots: ['<rootDir>/src', '<rootDir>/test'],
  testRegex: '.*\\.(spec|e2e-spec)\\.ts$',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: {
    '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }],
  },
  testTimeout: 30000,
  maxWorkers: 2,
};
