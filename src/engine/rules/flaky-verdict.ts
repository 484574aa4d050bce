/**
 * Flake-aware verdicts (queue settings `flakyPolicy` and `flakyRetries`, docs/decisions.md).
 * When a run fails on its required checks and the shell reports the failing tests of
 * every failed check, the verdict is one of:
 * - ignore: every failing test is quarantined on the target branch (or, with `ignore_flaky`, has
 *   flake history there): the run counts as passed and the history says FLAKY_FAILURES_IGNORED;
 * - retry: every failing test has flake history and the run has retries left: the same PRs are
 *   tested again on the same base, in the same place of the line (FLAKY_FAILURE_RETRIED);
 * - fail: anything else — the run failed as before (the PR fails, or its batch is bisected).
 * A test whose file a PR of the run changes is never ignored and never retried, and a failure
 * without failing tests (no results uploaded, a build error, a timeout) is an ordinary failure.
 */
import type { FailureReason } from '../../contract/index.js';
import type { FailedTest, QueueConfig, TestRun } from '../types.js';
import type { WorkingCopy } from '../working-copy.js';

export type FlakyVerdict = { kind: 'fail' } | { kind: 'ignore'; tests: string[] } | { kind: 'retry' };

const FAIL: FlakyVerdict = { kind: 'fail' };

/** The verdict on a failed run with these failing tests (undefined = not known). */
export function flakyVerdict(
  config: QueueConfig,
  run: TestRun,
  reason: FailureReason,
  failures: readonly FailedTest[] | undefined,
): FlakyVerdict {
  if (reason !== 'TEST_RUN_REQUIRED_STATUS_FAILED' || !failures || failures.length === 0) return FAIL;
  if (failures.some((t) => t.changedByPr)) return FAIL; // a test the change touches may really be broken by it
  const ignorable = (t: FailedTest) => t.quarantined || (config.flakyPolicy === 'ignore_flaky' && t.flaky);
  if (config.flakyPolicy !== 'off' && failures.every(ignorable))
    return { kind: 'ignore', tests: [...new Set(failures.map((t) => t.name))] };
  if ((run.attempt ?? 1) <= config.flakyRetries && failures.every((t) => t.flaky || t.quarantined)) return { kind: 'retry' };
  return FAIL;
}

/**
 * Tests a failed run's PRs again on the same base: a new run (the shell builds the same commit
 * content again) that keeps the failed run's place in the line, so nothing built on it restarts.
 */
export function retryRun(w: WorkingCopy, failed: TestRun): TestRun {
  const members = w.membersOf(failed.id);
  const created = w.createRun(members, failed.basePrNumbers, failed.isBisection);
  const run = w.updateRun(created, {
    seq: failed.seq,
    attempt: (failed.attempt ?? 1) + 1,
    retryOf: failed.id,
    mergeMethod: failed.mergeMethod,
    requiredStatuses: failed.requiredStatuses,
    ...(failed.isProbation ? { isProbation: true } : {}),
    ...(failed.landedSince ? { landedSince: true } : {}),
  });
  w.startRun(run);
  for (const m of members)
    w.setState(w.current(m), 'testing', 'FLAKY_FAILURE_RETRIED', { testRunId: run.id, testingStartedAt: w.ctx.now });
  return run;
}
