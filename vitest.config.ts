import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    // Two cores: keep one free for the child processes the tests spawn.
    poolOptions: { forks: { maxForks: 2 } },
    pool: 'forks',
  },
});
