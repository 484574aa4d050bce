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
    // Two cores: integration suites start real servers and git processes. (Three workers, tried twice:
    // 2026-11-26 one of two whole runs failed, and again at 22:00 two timing-bound tests failed at
    // load 6-9, e2e/github-truth's paced landings and server/fuzz's hostile bodies; bench/README.md.)
    maxWorkers: 2,
    disableConsoleIntercept: true,
    reporters: ['default', new SummaryReporter()],
  },
});
