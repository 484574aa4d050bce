import { defineConfig } from 'vitest/config';
import SummaryReporter from './test/support/summary-reporter.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A private TMPDIR per run that must be empty at the end: tests clean up what they create.
    globalSetup: ['test/support/global-tmp.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: integration suites start real servers and git processes.
    maxWorkers: 2,
    disableConsoleIntercept: true,
    reporters: ['default', new SummaryReporter()],
  },
});
