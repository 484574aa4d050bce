import { defineConfig } from 'vitest/config';
import SlowFilesFirst from './test/support/sequencer.js';
import SummaryReporter from './test/support/summary-reporter.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A private TMPDIR per run that must be empty at the end: tests clean up what they create. Then
    // one PostgreSQL cluster for the run (its files create their databases in it), inside that TMPDIR.
    globalSetup: ['test/support/global-tmp.ts', 'test/support/global-postgres.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // The longest files first (test/support/sequencer.ts): the run does not end on one of them alone.
    sequence: { sequencer: SlowFilesFirst },
    // Two cores: integration suites start real servers and git processes. (Three workers: one of two
    // whole runs failed, a GitHub end-to-end PR ending `failed`, as once with two; see bench/README.md.)
    maxWorkers: 2,
    disableConsoleIntercept: true,
    reporters: ['default', new SummaryReporter()],
  },
});
