// Jest's require(esm) refuses a CommonJS package that requires @nestjs/common (ESM) while the
// test's own module graph, which imports both, is still being walked ("in a cycle"): loaded
// here first, on its own, the package is in the registry before any graph needs it.
await import('@nestjs-cls/transactional');
