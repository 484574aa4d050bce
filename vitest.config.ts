import { defineConfig } from 'vitest/config';
import SlowFilesFirst from './test/support/sequencer.js';
import SummaryReporter from './test/support/summary-reporter.js';

/**
 * Test files that bound how long work in their own process takes (an in-process server's latency
 * or close, the store's lock waits, a browser's view of an in-process server) or that send very big
 * bodies from it (server/fuzz): each runs in a fresh process, as every file did before the `shared`
 * project below. A worker that has run many files carries their modules and garbage on its heap,
 * and its longer GC pauses take CPU and time from what such a file measures: server/fuzz's hostile
 * bodies failed their `/v1/status` bound in two whole runs with every file sharing workers
 * (bench/README.md, 2026-11-26; once more in a fresh process at load 7-9, when its floor was
 * measured before and not beside the hostile bodies). A new file with such a bound belongs here.
 */
export const FRESH_PROCESS_FILES = [
  'test/server/fuzz.test.ts',
  'test/server/trust-pass2.test.ts',
  'test/server/report-fairness.test.ts',
  'test/server/limits.test.ts',
  'test/server/hardening.test.ts',
  'test/server/flaky-big-upload.test.ts',
  'test/server/status-health.test.ts',
  'test/server/lifecycle.test.ts',
  'test/store/write-lock.test.ts',
  'test/e2e/github-webhook-limits.test.ts',
  'test/e2e/gitlab-webhook-limits.test.ts',
  'test/e2e/dashboard.test.ts',
  'test/e2e/dashboard-git.test.ts',
];

// What both projects share. Not `extends: true`: that would run the global setups once more per
// project (a second TMPDIR and PostgreSQL cluster); they run once, from the root config below.
const common = {
  testTimeout: 60_000,
  hookTimeout: 60_000,
  pool: 'forks' as const,
  disableConsoleIntercept: true,
  // Temporary dirs made with test/support/tmp.ts are removed after every file, shared worker or not.
  setupFiles: ['test/support/per-file.ts'],
};

export default defineConfig({
  test: {
    // A private TMPDIR per run that must be empty at the end: tests clean up what they create. Then
    // one PostgreSQL cluster for the run (its files create their databases in it), inside that TMPDIR.
    globalSetup: ['test/support/global-tmp.ts', 'test/support/global-postgres.ts'],
    projects: [
      {
        // Most files share a worker's process and its loaded modules (src/, test/support/, Fastify,
        // zod…) instead of a fresh process each: ~0.35 CPU-s less per file (bench/README.md). A file
        // leaves the process as it found it (CONTRIBUTING.md).
        test: {
          ...common,
          name: 'shared',
          include: ['test/**/*.test.ts'],
          exclude: FRESH_PROCESS_FILES,
          isolate: false,
        },
      },
      { test: { ...common, name: 'fresh', include: FRESH_PROCESS_FILES, isolate: true } },
    ],
    // The fresh-process files first, then the longest files first (test/support/sequencer.ts).
    sequence: { sequencer: SlowFilesFirst },
    // Three workers on two cores: the tests wait on servers, git and timers about a third of the time,
    // which a third file fills. Kept after three green whole runs in a row on the shared machine
    // (2026-11-27, bench/README.md); earlier tries failed on e2e/github-truth's paced landings (a
    // timeout that fits them since) and server/fuzz's hostile bodies (a floor measured beside them
    // since). A timing-bound test that fails here wants a bound measured in the same conditions.
    maxWorkers: 3,
    disableConsoleIntercept: true,
    reporters: ['default', new SummaryReporter()],
  },
});
