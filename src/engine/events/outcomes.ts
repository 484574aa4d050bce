/**
 * Outcomes: what the shell reports back about the effects it carried out (a run started, could
 * not be built, finished; a merge landed or did not; the target moved) and the passing of time.
 * Outcomes for runs that are no longer current are ignored: the shell may report late.
 */
import type { FailureReason, QueuedReason } from '../../contract/index.js';
import { findEntry, isTerminal } from '../model.js';
import { flakyVerdict, retryRun } from '../rules/flaky-verdict.js';
import { testingTimeoutMs, withPassedRun } from '../timeout.js';
import type {
  FailedTest,
  MergeFailedEvent,
  MergeSucceededEvent,
  TargetMovedEvent,
  TestRun,
  TestRunFinishedEvent,
  TestRunStartedEvent,
  TestRunStartFailedEvent,
  TickEvent,
} from '../types.js';
import type { WorkingCopy } from '../working-copy.js';

/** Time passed: runs older than `testingTimeoutMinutes` fail with TEST_RUN_TIMEOUT. (Batch waits are read by scheduling.) */
export function tick(w: WorkingCopy, _event: TickEvent): void {
  const timeout = testingTimeoutMs(w.config);
  if (timeout <= 0) return;
  for (const run of [...w.runs]) {
    if (run.status === 'in_progress' && w.ctx.now - run.startedAt >= timeout) {
      w.effects.push({ type: 'cancelTestRun', runId: run.id });
      finishRun(w, run, false, 'TEST_RUN_TIMEOUT', run.checks);
    }
  }
}

export function testRunStarted(w: WorkingCopy, { runId, branch, sha }: TestRunStartedEvent): void {
  const run = w.run(runId);
  if (!run || run.status !== 'in_progress') return;
  w.updateRun(run, { branch, sha });
}

/** The test commit could not be built: the conflicting PR fails alone when it is known, else the whole unit. */
export function testRunStartFailed(
  w: WorkingCopy,
  { runId, reason, prNumber }: TestRunStartFailedEvent,
): void {
  const run = w.run(runId);
  if (!run || run.status !== 'in_progress') return;
  const unit = w.units().find((u) => u.run.id === runId);
  w.updateRun(run, { status: 'failed', finishedAt: w.ctx.now, failureReason: reason });
  if (!unit) return;
  const culprit = unit.members.find((m) => m.prNumber === prNumber);
  if (!culprit && prNumber !== undefined && run.basePrNumbers.includes(prNumber)) {
    // A PR it was built on conflicts (a bisection base PR that is tested in the line meanwhile):
    // that PR's own test fails on it; these go back to be built again.
    for (const m of unit.members) w.setState(m, 'pending', 'PREREQUISITE_MERGE_ITEM_FAILED');
    return;
  }
  if (culprit && unit.members.length > 1) {
    // One PR of a batch conflicts: it fails alone, the others go back to be tested without it.
    w.setState(culprit, 'failed', reason);
    for (const m of unit.members)
      if (m !== culprit) w.setState(w.current(m), 'pending', 'PREREQUISITE_MERGE_ITEM_FAILED');
    return;
  }
  for (const m of unit.members) w.setState(m, 'failed', reason);
}

export function testRunFinished(
  w: WorkingCopy,
  { runId, passed, checks, reason, failures }: TestRunFinishedEvent,
): void {
  const run = w.run(runId);
  if (!run || run.status !== 'in_progress') return;
  finishRun(
    w,
    run,
    passed,
    passed ? null : (reason ?? 'TEST_RUN_REQUIRED_STATUS_FAILED'),
    checks ?? run.checks,
    passed ? undefined : failures,
  );
}

/**
 * A run's verdict: its PRs pass (`tests_passed`) or wait to be judged (`pending_failure`); a
 * failure only of known-flaky tests may count as passed or be retried (rules/flaky-verdict.ts).
 */
function finishRun(
  w: WorkingCopy,
  run: TestRun,
  passed: boolean,
  reason: FailureReason | null,
  checks: TestRun['checks'],
  failures?: FailedTest[],
): void {
  const members = w.membersOf(run.id);
  const verdict = passed ? null : flakyVerdict(w.config, run, reason as FailureReason, failures);
  const ignored = verdict?.kind === 'ignore' ? verdict.tests : null;
  const succeeded = passed || ignored !== null;
  const finished = w.updateRun(run, {
    status: succeeded ? 'succeeded' : 'failed',
    finishedAt: w.ctx.now,
    failureReason: succeeded ? null : reason,
    checks,
    ...(failures ? { failures } : {}),
    ...(ignored ? { flakyIgnored: ignored } : {}),
  });
  // "auto" timeouts follow how long the queue's passing runs take.
  if (passed && w.config.testingTimeoutMinutes === 'auto')
    w.config = withPassedRun(w.config, w.ctx.now - run.startedAt);
  if (verdict?.kind === 'retry') {
    retryRun(w, finished);
    return;
  }
  for (const m of members) {
    if (succeeded) w.setState(m, 'tests_passed', ignored ? 'FLAKY_FAILURES_IGNORED' : null);
    else w.setState(m, 'pending_failure', reason);
  }
}

export function mergeSucceeded(w: WorkingCopy, { runId }: MergeSucceededEvent): void {
  const run = w.run(runId);
  if (!run || !run.mergeRequested) return;
  for (const pr of run.mergePrNumbers ?? run.prNumbers) {
    const entry = findEntry(w.model, pr);
    if (entry && !isTerminal(entry.state)) w.setState(entry, 'merged', 'MERGE_GRAPH_MERGE');
  }
  // The bisection groups tested before this landing can no longer land as they were tested.
  for (const unit of w.units())
    if (unit.run.isBisection && !unit.run.landedSince) w.updateRun(unit.run, { landedSince: true });
}

/** Someone moved the target under the merge (everything restarts), or the forge failed it (its PRs fail). */
export function mergeFailed(w: WorkingCopy, { runId, reason, pauseQueue }: MergeFailedEvent): void {
  const run = w.run(runId);
  if (!run || !run.mergeRequested) return;
  w.updateRun(run, { mergeRequested: false, mergePrNumbers: null });
  if (reason === 'target_moved') {
    restartAll(w, 'MANUAL_PUSH_TO_TARGET_BRANCH');
    return;
  }
  if (reason === 'refused' && pauseQueue) {
    // Every PR would be refused alike: stop here (a person changes the rule and resumes the queue).
    w.config = { ...w.config, state: 'paused' };
    return;
  }
  for (const m of w.membersOf(runId)) w.setState(m, 'failed', 'GITHUB_API_MERGE_PR_FAILED');
}

/**
 * The target moved outside the queue: every unit restarts, except one whose merge is in flight.
 * Its outcome decides: it landed (mergeSucceeded) or the moved target refused it (mergeFailed with
 * target_moved restarts everything then). Restarting it here would drop a landing that already
 * happened, and test and land its PRs a second time.
 */
export function targetMoved(w: WorkingCopy, _event: TargetMovedEvent): void {
  for (const unit of w.units()) if (!unit.run.mergeRequested) w.restartUnit(unit, 'MANUAL_PUSH_TO_TARGET_BRANCH');
}

/** Every unit goes back to pending (the target moved under it). */
function restartAll(w: WorkingCopy, reason: QueuedReason): void {
  for (const unit of w.units()) {
    if (unit.run.mergeRequested)
      w.updateRun(w.run(unit.run.id) as TestRun, { mergeRequested: false, mergePrNumbers: null });
    w.restartUnit(unit, reason);
  }
}
