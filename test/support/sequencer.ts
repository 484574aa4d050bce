/** Vitest sequencer: the test files that take longest start first, so none of them starts last and alone. */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Wall seconds per file in a whole-suite run (2026-11-27 03:35-03:47, main 8240380, 3 workers, load
 * 0.3-15 from other work: relative, not absolute), for the files over ~10 s; e2e/github-truth among
 * the first, since its test 5 lands six PRs at one GitHub write a second. A fresh clone (CI) has no
 * timings of its own, and vitest then orders by file size, which started e.g. cli/cli.test.ts (81 s
 * then) among the last; with files of 15-20 s left for the end (e2e/demo was not listed and ended
 * the run on 2026-11-27 at 02:22), the last minute has one worker busy and the others idle.
 * The files of the CI-time passes of 2026-12-04 (bench/README.md) carry that day's figures instead:
 * the whole CI run's wall seconds, or for the files it made shorter (action, flaky-tickets,
 * webhooks, gitlab-queue, gitlab-batch) that figure times the before/after ratio measured then;
 * cli (65 here before) took 22 s, check-limits (50) 20 s, e2e/postgres (33) 19 s.
 * The files of the waiting pass of 2026-12-04 (bench/README.md: tests side by side, shorter waits)
 * carry their figure here times the after/before ratio of their own wall seconds measured alone,
 * one run of each right after the other; runner/runner (25 s in that day's whole run) is new here.
 * Approximate by nature: a file missing here or grown since only starts later than ideal. Redo it
 * from `RAILYARD_TEST_CPU_LOG=<file> npx vitest run` (test/support/per-file.ts: `<cpu-s> <wall-s> <path>`).
 */
const SLOW_FILES: Record<string, number> = {
  'test/e2e/flaky-tickets.test.ts': 24,
  // 2026-12-04: its testing timeout waits 30 s, not 60 (serve --testing-minute-seconds); test 5
  // is now its longest.
  'test/e2e/github-truth.test.ts': 62,
  'test/e2e/check-identities.test.ts': 60,
  'test/cli/api-version.test.ts': 55,
  'test/e2e/check-limits.test.ts': 20,
  // 2026-12-04: the three lanes of github-queue.test.ts (70 s), a file each. They ran side by side
  // in it, so each takes most of its time, not a third: alone at load 5-8, 21.9, 23.2 and 22.0
  // wall-s against its 29.6, scaled to 70.
  'test/e2e/github-queue-landing.test.ts': 52,
  'test/e2e/github-queue-ci.test.ts': 55,
  'test/e2e/github-queue-events.test.ts': 52,
  // 2026-12-04: its 1-minute testing timeout lasts 10 s (serve --testing-minute-seconds): 12 s
  // quiet, 19-27 s at load 14-16.
  'test/e2e/github-doctor.test.ts': 23,
  'test/cli/cli.test.ts': 13,
  'test/e2e/github-landing.test.ts': 48,
  'test/e2e/git-queue.test.ts': 37,
  'test/e2e/git-stacks.test.ts': 16,
  // 2026-12-04: its two tests side by side (7 s quiet, 19-33 s at load 13-15).
  'test/e2e/github-stacks.test.ts': 20,
  'test/e2e/gitlab-stacks.test.ts': 21,
  'test/e2e/github-forge-truth.test.ts': 37,
  'test/server/fuzz.test.ts': 31,
  'test/action/action.test.ts': 20,
  // 2026-12-04: split from action.test.ts (alone at load 7-9: 7 wall-s; action.test.ts 21).
  'test/action/action-running-queues.test.ts': 7,
  'test/e2e/demo.test.ts': 34,
  'test/e2e/postgres.test.ts': 19,
  'test/server/lifecycle.test.ts': 23,
  'test/e2e/gitlab-pipelines.test.ts': 32,
  'test/sim/sim.test.ts': 25,
  // 2026-12-04: the halves of webhooks.test.ts (16 s), alone at load 14-15: 10 wall-s each.
  'test/server/webhooks-events.test.ts': 10,
  'test/server/webhooks-delivery.test.ts': 10,
  'test/e2e/pack.test.ts': 24,
  'test/server/postgres.test.ts': 21,
  'test/cli/flaky-upload.test.ts': 30,
  'test/e2e/gitlab-landing.test.ts': 30,
  'test/e2e/gitlab-truth.test.ts': 28,
  'test/e2e/gitlab-requests.test.ts': 14,
  'test/server/trust.test.ts': 23,
  // 2026-12-04: the halves of dashboard.test.ts (25 s), alone at load 3-4: 11.2 and 9.9 wall-s
  // against its 20.6.
  'test/e2e/dashboard.test.ts': 13,
  'test/e2e/dashboard-git.test.ts': 12,
  'test/e2e/doctor.test.ts': 20,
  'test/e2e/dashboard-health.test.ts': 15,
  'test/cli/terminal-escapes.test.ts': 24,
  // Added 2026-12-03 (measured alone at load 12-16: 34 wall-s, 11 CPU-s).
  'test/cli/narrow-terminal.test.ts': 24,
  'test/cli/output.test.ts': 23,
  'test/forge/git.test.ts': 22,
  'test/cli/queue-ops.test.ts': 14,
  'test/e2e/gitlab-batch.test.ts': 15,
  'test/e2e/gitlab-queue.test.ts': 17,
  'test/e2e/risk.test.ts': 12,
  // 2026-12-04: the parts of flaky.test.ts (18 s here; 10.1 alone), by their wall-s alone at load
  // 3-5, the mean of two runs each (9.1/6.1, 3.3/3.1 and 4.5/6.5).
  'test/server/flaky-upload.test.ts': 8,
  'test/server/flaky-classify.test.ts': 3,
  'test/server/flaky-endpoints.test.ts': 6,
  'test/e2e/gitlab-ci-template.test.ts': 3,
  'test/e2e/github-flaky.test.ts': 19,
  // Added 2026-12-04 (measured alone at load 7-18: 21 wall-s, mostly waiting on emulated CI).
  'test/e2e/github-requests.test.ts': 21,
  'test/cli/fast-path.test.ts': 18,
  'test/e2e/flaky-queue.test.ts': 18,
  'test/e2e/webhooks.test.ts': 9,
  // 2026-12-04: the parts of behaviour.test.ts (17 s), by their wall-s alone at load 9-11 (4.5, 8.2
  // and 2.2 of 14.9).
  'test/server/behaviour-queues.test.ts': 5,
  'test/server/behaviour-prs.test.ts': 9,
  'test/server/behaviour-http.test.ts': 3,
  'test/sim/flaky-sim.test.ts': 16,
  'test/e2e/malicious-check.test.ts': 16,
  'test/e2e/github-merge-api.test.ts': 15,
  'test/e2e/github-webhook-limits.test.ts': 15,
  'test/e2e/descriptor-exhaustion.test.ts': 10,
  'test/e2e/freeze.test.ts': 10,
  'test/engine/properties.test.ts': 15,
  'test/cli/defaults.test.ts': 15,
  'test/cli/history.test.ts': 15,
  'test/store/wal.test.ts': 14,
  'test/server/metrics.test.ts': 8,
  'test/support/github-emulator-git.test.ts': 14,
  'test/e2e/github-polling.test.ts': 13,
  'test/e2e/why-failed.test.ts': 13,
  'test/e2e/new-user.test.ts': 13,
  'test/cli/watch.test.ts': 13,
  'test/e2e/gitlab-flaky.test.ts': 13,
  'test/server/flaky-big-upload.test.ts': 12,
  'test/cli/token.test.ts': 7,
  'test/server/hardening.test.ts': 11,
  'test/e2e/quarantine-expiry.test.ts': 22,
  'test/server/flaky-quarantine.test.ts': 11,
  'test/e2e/dashboard-flaky-lifecycle.test.ts': 10,
  'test/server/report-fairness.test.ts': 10,
  'test/runner/isolation.test.ts': 7,
  'test/runner/runner.test.ts': 21,
  'test/support/github-emulator-api.test.ts': 10,
  'test/e2e/quarantine-lapse.test.ts': 7,
};

/**
 * The files of the `fresh` project (vitest.config.ts: a fresh process per file) first, then those of
 * `shared`; within each, the files above first, longest first, then the others in vitest's own order.
 *
 * Why the fresh ones first, together: vitest's pool keeps a shared worker for the next file only if
 * the file at the head of its queue is a shared one too; a fresh file there ends the worker, and the
 * next shared file pays for a new process and its imports again. Queued together, they end at most
 * one shared worker; spread by length through the queue, they ended one each. At the start they run
 * beside the longest shared files (e2e/github-truth and e2e/github-queue-*), which start ~30 s later.
 */
export default class SlowFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const root = this.ctx.config.root.replace(/\/$/, '');
    const seconds = (spec: TestSpecification) => SLOW_FILES[spec.moduleId.slice(root.length + 1)] ?? 0;
    const fresh = (spec: TestSpecification) => (spec.project.config.isolate === false ? 0 : 1);
    // Array.prototype.sort is stable: files of equal weight (0: the rest) keep vitest's order.
    return ordered.sort((a, b) => fresh(b) - fresh(a) || seconds(b) - seconds(a));
  }
}
