/** The vitest reporter that prints the closing `N passed, N failed` line CI reads. */
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints the closing line CI reads, `N passed, N failed` (plus skipped), after vitest's own
 * summary. Vitest has no such line of its own.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const mod of testModules) {
      let seen = 0;
      for (const test of mod.children.allTests()) {
        seen++;
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped++;
      }
      // A file that failed to load has no tests but must not pass silently.
      if (seen === 0 && mod.state() === 'failed') failed++;
    }
    failed += unhandledErrors.length;
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
