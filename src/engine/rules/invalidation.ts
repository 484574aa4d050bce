/**
 * Invalidation: a test result is only worth something while what it was built on still holds.
 * A run nobody is in any more stops; a unit whose own PRs or base changed goes back to pending;
 * an urgent PR interrupts the tests it would otherwise wait behind.
 */
import type { QueuedReason } from '../../contract/index.js';
import { activeFreeze } from '../freezes.js';
import { IN_RUN, isTerminal, targetsOverlap } from '../model.js';
import type { Entry } from '../types.js';
import { inLine, type Unit, type WorkingCopy } from '../working-copy.js';
import { isCandidate } from './bisection.js';

/** Restart reasons that also explain the restart of the units built on top of the restarted one. */
const PASSED_ON_REASONS: ReadonlySet<string> = new Set<QueuedReason>([
  'MANUAL_PUSH_TO_TARGET_BRANCH',
  'SKIP_THE_LINE_INTERRUPTED',
  'TESTS_RESTARTED_BY_USER',
  'TESTS_RESTARTED_BY_API_REQUEST',
  'PREREQUISITE_MERGE_ITEM_CANCELLED',
]);

/** Why the units built on `entry` restart when it no longer lands ahead of them. */
function restartReason(entry: Entry): QueuedReason {
  if (entry.state === 'failed') return 'PREREQUISITE_MERGE_ITEM_FAILED';
  if (entry.state === 'cancelled') return 'PREREQUISITE_MERGE_ITEM_CANCELLED';
  return entry.reason && PASSED_ON_REASONS.has(entry.reason)
    ? (entry.reason as QueuedReason)
    : 'PREREQUISITE_MERGE_ITEM_FAILED';
}

/** A run nobody is in any more (all its PRs cancelled) stops. */
export function cancelOrphanRuns(w: WorkingCopy): void {
  const inRun = new Set<string>();
  for (const e of w.entries) if (e.testRunId && IN_RUN.has(e.state)) inRun.add(e.testRunId);
  for (const run of [...w.runs]) {
    if (run.status === 'in_progress' && !inRun.has(run.id)) {
      w.effects.push({ type: 'cancelTestRun', runId: run.id });
      w.updateRun(run, { status: 'cancelled', finishedAt: w.ctx.now });
    }
  }
}

/**
 * A unit's test commit is only worth something while what it was built on still holds: a PR of
 * its own that left it, or a PR of its base that failed, left, or went back to pending, sends the
 * unit back to pending. A main-line unit needs its base to land before it (merged, or in a unit
 * of the line ahead); a bisection group only diagnoses, so its base PRs need only stay candidates.
 */
export function invalidate(w: WorkingCopy): void {
  const units = w.units();
  const unitOf = new Map<number, Unit>();
  for (const unit of units) for (const m of unit.members) unitOf.set(m.prNumber, unit);
  for (const unit of units) {
    if (unit.run.mergeRequested) continue;
    const holds = (pr: number, own: boolean): QueuedReason | null => {
      const e = w.find(pr);
      if (!e || e.state === 'merged') return null;
      const at = unitOf.get(pr);
      if (
        own
          ? at === unit
          : unit.run.isBisection
            ? isCandidate(e)
            : at !== undefined && inLine(at) && at.run.seq < unit.run.seq
      )
        return null;
      return restartReason(e);
    };
    let reason: QueuedReason | null = null;
    for (const pr of unit.run.basePrNumbers) reason ??= holds(pr, false);
    for (const pr of unit.run.prNumbers) reason ??= holds(pr, true);
    if (reason) {
      for (const m of unit.members) unitOf.delete(m.prNumber);
      w.restartUnit(unit, reason);
    }
  }
}

/**
 * An urgent PR interrupts the non-urgent tests it would have to wait behind. An urgent PR of a
 * bisection group waits for a bisection slot, not behind the line, so it interrupts nothing
 * (interrupting the line for it would restart the same tests in every round of `settle`).
 * During a freeze, a PR that may land (priority ≤ freezeBypassPriority) also interrupts the passed
 * units ahead of it that may not: they would hold it until the freeze ends.
 */
export function preempt(w: WorkingCopy): void {
  if (w.config.state === 'paused') return;
  releaseFrozen(w);
  const urgent = w.entries.filter((e) => e.state === 'pending' && e.priority.value === 0 && !e.bisectGroup);
  if (!urgent.length) return;
  const parallel = w.config.mode === 'parallel';
  for (const unit of w.units()) {
    if (unit.run.isBisection || unit.run.mergeRequested || unit.run.status === 'succeeded') continue; // bisection is off the line
    if (unit.members.some((m) => m.priority.value === 0)) continue;
    if (parallel && !urgent.some((u) => targetsOverlap(u.impactedTargets, unit.targets))) continue;
    w.restartUnit(unit, 'SKIP_THE_LINE_INTERRUPTED');
  }
}

/** During a freeze: restarts the passed units that may not land and stand before a PR that may. */
function releaseFrozen(w: WorkingCopy): void {
  if (!w.config.freezes?.length) return;
  const bypass = w.config.freezeBypassPriority ?? 0;
  const waiting = w.entries.filter(
    (e) => !isTerminal(e.state) && e.state !== 'not_ready' && e.priority.value <= bypass && !e.bisectGroup,
  );
  if (!waiting.length || activeFreeze(w.config.freezes, w.ctx.now) === null) return;
  const parallel = w.config.mode === 'parallel';
  const seqOf = (e: Entry) =>
    IN_RUN.has(e.state) && e.testRunId ? (w.run(e.testRunId)?.seq ?? Infinity) : Infinity;
  for (const unit of w.units()) {
    if (unit.run.isBisection || unit.run.mergeRequested || unit.run.status !== 'succeeded') continue;
    if (unit.members.every((m) => m.priority.value <= bypass)) continue;
    const behind = waiting.filter((e) => seqOf(e) > unit.run.seq);
    if (!behind.length || (parallel && !behind.some((e) => targetsOverlap(e.impactedTargets, unit.targets))))
      continue;
    w.restartUnit(unit, 'SKIP_THE_LINE_INTERRUPTED');
  }
}
