/**
 * Merging: one merge at a time, of the first unit that passed and whose base has landed. With
 * optimistic merging (`canOptimisticallyMerge`) a passing unit may land while the units it was
 * built on are still in the line ahead of it: its commit contains them, so they land with it.
 * A retry of a flaky failure (flakyRetries, rules/flaky-verdict.ts) is settled the same way even
 * without optimistic merging: a passing run built on it tested its PRs too (bench/README.md,
 * 2026-11-26: the retried PR no longer holds the line for a whole T).
 */
import { activeFreeze } from '../freezes.js';
import type { TestRun } from '../types.js';
import type { WorkingCopy } from '../working-copy.js';
import { Stacks } from './stacks.js';

/** Lands the first passing unit whose base has landed (or, optimistically, is still in flight). */
export function requestMerge(w: WorkingCopy): void {
  if (w.config.state === 'paused') return;
  if (w.runs.some((r) => r.mergeRequested && w.membersOf(r.id).length > 0)) return; // one merge at a time
  const units = w.units();
  // A freeze lands only units whose every PR (those ahead it carries included) bypasses freezes.
  const frozen = activeFreeze(w.config.freezes, w.ctx.now) !== null;
  const priorityOf = new Map<number, number>();
  if (frozen)
    for (const unit of units) for (const m of unit.members) priorityOf.set(m.prNumber, m.priority.value);
  const bypasses = (pr: number) => (priorityOf.get(pr) ?? Infinity) <= (w.config.freezeBypassPriority ?? 0);
  const position = new Map<number, number>();
  const runOf = new Map<number, TestRun>();
  for (const unit of units)
    for (const m of unit.members) {
      position.set(m.prNumber, unit.run.seq);
      runOf.set(m.prNumber, unit.run);
    }
  // A retry of a flaky failure (flakyRetries) is settled by any passing run built on it, as optimistic merging would.
  const retrying = (pr: number) => {
    const run = runOf.get(pr);
    return run !== undefined && Boolean(run.retryOf) && run.status === 'in_progress';
  };
  // Who is stacked on whom: read once, the entries do not change before a merge is asked for.
  const stacks = new Stacks(w.entries);
  for (const unit of units) {
    if (unit.run.status !== 'succeeded') continue;
    const base = w.unmergedBase(unit.run);
    if (base.length > 0 && !w.config.canOptimisticallyMerge && !base.every(retrying)) continue;
    // Optimistically landing PRs ahead needs each of them to still be in a unit ahead.
    if (base.some((pr) => (position.get(pr) ?? Infinity) >= unit.run.seq)) continue;
    const prNumbers = [...base, ...unit.members.map((m) => m.prNumber)];
    if (frozen && !prNumbers.every(bypasses)) continue;
    // A stack lands whole (stacks.ts): never a merge that holds part of one.
    if (
      stacks.any &&
      unit.members.some((m) => stacks.members(m).some((s) => !prNumbers.includes(s.prNumber)))
    )
      continue;
    const run = w.run(unit.run.id) as TestRun;
    w.updateRun(run, { mergeRequested: true, mergePrNumbers: prNumbers });
    w.effects.push({ type: 'merge', runId: run.id, prNumbers });
    return;
  }
}
