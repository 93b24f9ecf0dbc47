import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // type-graphql fails with "Cannot use GraphQLSchema from another module or realm"
    // unless every import of graphql resolves to the same copy.
    alias: { graphql: require.resolve('graphql') },
  },
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    // A worker process runs file after file without re-importing the app (which took about a
    // fifth of the run: ~2.4 s per file on a quiet machine). Files still get their own SECRETS_KEY
    // (test/setup.ts) and close every server they start; see test/README.md, "Shared workers".
    isolate: false,
    // Most of a test file's time is spent waiting on sockets, databases and timers, not on the CPU:
    // two files at a time keep both cores of a 2-core machine busy (vitest's default is cores - 1).
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
