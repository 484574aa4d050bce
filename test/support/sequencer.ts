/** Vitest sequencer: the test files that take longest start first, so none of them starts last and alone. */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Wall seconds per file in a whole-suite run (2026-11-26 18:31, 2 workers, load 3-16), for the
 * files over ~20 s. A fresh clone (CI) has no timings of its own, and vitest then orders by file
 * size, which started e.g. cli/cli.test.ts (81 s) among the last. Approximate by nature: a file
 * missing here or grown since only starts later than ideal.
 */
const SLOW_FILES: Record<string, number> = {
  'test/e2e/github-queue.test.ts': 89,
  'test/cli/cli.test.ts': 81,
  'test/e2e/github-truth.test.ts': 64,
  'test/cli/output.test.ts': 60,
  'test/e2e/git-queue.test.ts': 58,
  'test/e2e/postgres.test.ts': 48,
  'test/action/action.test.ts': 48,
  'test/server/fuzz.test.ts': 44,
  'test/cli/queue-ops.test.ts': 44,
  'test/server/webhooks.test.ts': 42,
  'test/server/flaky.test.ts': 42,
  'test/server/trust.test.ts': 36,
  'test/e2e/pack.test.ts': 35,
  'test/server/postgres.test.ts': 33,
  'test/e2e/github-polling.test.ts': 33,
  'test/cli/flaky-upload.test.ts': 33,
  'test/e2e/gitlab-truth.test.ts': 32,
  'test/cli/defaults.test.ts': 32,
  'test/server/behaviour.test.ts': 30,
  'test/sim/sim.test.ts': 30,
  'test/server/lifecycle.test.ts': 29,
  'test/e2e/risk.test.ts': 29,
  'test/store/wal.test.ts': 26,
  'test/e2e/gitlab-batch.test.ts': 25,
  'test/server/metrics.test.ts': 22,
};

/** The files above first, longest first; then the others in vitest's own order. */
export default class SlowFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const root = this.ctx.config.root.replace(/\/$/, '');
    const seconds = (spec: TestSpecification) => SLOW_FILES[spec.moduleId.slice(root.length + 1)] ?? 0;
    // Array.prototype.sort is stable: files of equal weight (0: the rest) keep vitest's order.
    return ordered.sort((a, b) => seconds(b) - seconds(a));
  }
}
