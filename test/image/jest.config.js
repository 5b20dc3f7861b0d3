// The production tree's smoke (`npm run test:image`, which builds the tree first): the e2e
// project's settings on test/image/ alone, which jest.config.js leaves out of `npm test`.
import base from '../../jest.config.js';

const e2e = base.projects.find((project) => project.displayName === 'e2e');

/** @type {import('jest').Config} */
export default {
  ...e2e,
  rootDir: '../..',
  displayName: 'image',
  roots: ['<rootDir>/test/image'],
  testMatch: ['<rootDir>/test/image/**/*.e2e-spec.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  testTimeout: base.testTimeout,
  maxWorkers: 1,
};
