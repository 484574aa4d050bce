/**
 * Failures, bisection and known failures. A failed unit of the line is judged once the culprit
 * can only be in it: the units ahead have landed and the `pendingFailureDepth` successors it
 * waits for have finished. A single PR then fails; a batch is split in halves that leave the line
 * and are tested on the bisection slots, each on the candidates of the failed combination ahead
 * of it. A half that passes lands at once if its commit is still the target's next one, and
 * otherwise goes back to the line. With `bisection_skip_redundant_tests`, a half whose test would
 * repeat the combination known to fail fails without a run once the rest of it is cleared. A stack
 * (stacks.ts) is never split: a failed unit is split between stacks and single PRs, and a failed
 * stack alone fails whole.
 */
import { isTerminal, targetsOverlap } from '../model.js';
import type { Entry } from '../types.js';
import { inLine, successors, type Unit, type WorkingCopy } from '../working-copy.js';
import type { Slots } from './lanes.js';
import { blocksOf, inStackOrder, Stacks } from './stacks.js';

/**
 * A PR of a failed combination that may still land: split out of the batch in this submission,
 * admitted and not concluded (in its bisection, or back in the main line after its group passed).
 */
export function isCandidate(entry: Entry | undefined): entry is Entry {
  return (
    entry !== undefined && entry.bisected === true && !isTerminal(entry.state) && entry.state !== 'not_ready'
  );
}

/** Whether a PR of a failed combination is known not to be its culprit: it landed, or its bisection group passed. */
function cleared(w: WorkingCopy, prNumber: number): boolean {
  const e = w.find(prNumber);
  return e?.state === 'merged' || (isCandidate(e) && !e.bisectGroup);
}

/**
 * A failed unit of the line waits for the units ahead to land and for `pendingFailureDepth`
 * successors to finish; then it is cleared by an optimistic merge, bisected, or fails. A failed
 * bisection group waits until each PR it was built on has landed or passed its own bisection.
 */
export function resolveFailures(w: WorkingCopy): void {
  const units = w.units();
  const line = units.filter(inLine);
  let stacks: Stacks | undefined;
  for (const unit of units) {
    if (unit.run.status !== 'failed' || unit.run.mergeRequested) continue;
    if (unit.run.isBisection) {
      if (!unit.run.basePrNumbers.every((pr) => cleared(w, pr))) continue; // the culprit may be among them
    } else {
      if (w.unmergedBase(unit.run).length > 0) continue; // the culprit may be ahead
      const watched = successors(unit, line).slice(0, w.config.pendingFailureDepth);
      if (watched.some((u) => u.run.status === 'in_progress')) continue;
      if (w.config.canOptimisticallyMerge && watched.some((u) => u.run.status === 'succeeded')) continue; // a merge clears it
    }
    const reason = unit.run.failureReason ?? 'TEST_RUN_REQUIRED_STATUS_FAILED';
    stacks ??= new Stacks(w.entries);
    const blocks = unit.members.length > 1 ? blocksOf(stacks, unit.members) : [unit.members];
    if (blocks.length > 1 && reason !== 'TEST_RUN_TIMEOUT') bisect(w, unit, blocks);
    else for (const m of unit.members) w.setState(w.current(m), 'failed', reason);
  }
}

/**
 * Splits a failed unit in halves that leave the line: they are tested on `bisectionConcurrency`
 * slots while the line goes on without them (the units built on them restart).
 */
function bisect(w: WorkingCopy, unit: Unit, blocks: Entry[][]): void {
  const base = w.unmergedBase(unit.run);
  const half = Math.ceil(blocks.length / 2);
  for (const group of [blocks.slice(0, half).flat(), blocks.slice(half).flat()]) {
    const id = w.ctx.newId();
    for (const m of group) {
      w.setState(w.current(m), 'pending', 'BISECTION_REQUIRED', {
        bisectGroup: id,
        bisectKnownFailure: { base: [...base], prs: [...unit.run.prNumbers] },
        bisected: true,
      });
    }
  }
}

/**
 * The PRs a bisection group is tested on: the candidates of its failed combination that come
 * before it. Those that passed their own bisection stay in: a later failure of the group then
 * points at the group itself (what `bisection_skip_redundant_tests` relies on).
 */
function bisectionBase(w: WorkingCopy, members: Entry[]): number[] {
  const known = members[0].bisectKnownFailure;
  if (!known) return [];
  const first = Math.min(...members.map((m) => known.prs.indexOf(m.prNumber)));
  return [...known.base, ...known.prs.slice(0, first)].filter((pr) => isCandidate(w.find(pr)));
}

/** Whether testing `members` on `base` repeats the combination their bisection started from (its landed PRs included). */
function knownToFail(w: WorkingCopy, members: Entry[], base: number[]): boolean {
  const known = members[0].bisectKnownFailure;
  if (!known) return false;
  const tested = new Set([...base, ...members.map((m) => m.prNumber)]);
  return [...known.base, ...known.prs].every((pr) => tested.has(pr) || w.find(pr)?.state === 'merged');
}

/** Bisection groups: each is tested on the candidates of its failed combination ahead of it, never on the line. */
export function startBisections(w: WorkingCopy, pending: Entry[], slots: Slots): void {
  const groups = new Map<string, Entry[]>();
  for (const e of pending) {
    if (!e.bisectGroup) continue;
    const group = groups.get(e.bisectGroup);
    if (group) group.push(e);
    else groups.set(e.bisectGroup, [e]);
  }
  const stacks = groups.size ? new Stacks(w.entries) : undefined;
  for (const group of groups.values()) {
    const members = stacks ? inStackOrder(stacks, group) : group;
    const base = bisectionBase(w, members);
    if (w.config.optimizationMode === 'bisection_skip_redundant_tests' && knownToFail(w, members, base)) {
      // This exact combination already failed: once the rest of it is cleared, the group is the culprit without a run.
      if (!base.every((pr) => cleared(w, pr))) continue;
      const run = w.createRun(members, base, true);
      w.updateRun(run, {
        status: 'failed',
        finishedAt: w.ctx.now,
        failureReason: 'TEST_RUN_FAILED_BY_OPTIMIZATION',
      });
      for (const m of members)
        w.setState(w.current(m), 'pending_failure', 'TEST_RUN_FAILED_BY_OPTIMIZATION', { testRunId: run.id });
      continue;
    }
    if (!slots.free(members[0], true)) continue;
    const run = w.launch(members, base, true);
    if (members[0].probation === 'testing') w.updateRun(run, { isProbation: true }); // rules/probation.ts
    slots.take(members[0], true);
  }
}

/**
 * A bisection group that passed lands at once when its commit is still exactly what the target
 * would become (built on the bare target, nothing landed since it started) and nothing of the
 * line in its lane is in flight, which would have to restart. Otherwise its PRs go back to the
 * main line, in their queue order, to be tested there (`BISECTION_TEST_RUN_PASSED`).
 */
export function releaseBisections(w: WorkingCopy): void {
  const units = w.units();
  const line = units.filter(inLine);
  for (const unit of units) {
    if (!unit.run.isBisection || unit.run.status !== 'succeeded' || unit.run.mergeRequested) continue;
    if (landsDirectly(w, unit, line)) continue; // requestMerge lands it
    for (const m of unit.members) {
      const probation = m.probation === 'testing'; // rules/probation.ts: it joins the line
      w.setState(w.current(m), 'pending', probation ? 'PROBATION_PASSED' : 'BISECTION_TEST_RUN_PASSED', {
        bisectGroup: null,
        bisectKnownFailure: null,
        ...(probation ? { probation: 'passed' as const } : {}),
      });
    }
  }
}

function landsDirectly(w: WorkingCopy, unit: Unit, line: Unit[]): boolean {
  if (unit.run.basePrNumbers.length > 0 || unit.run.landedSince) return false;
  const parallel = w.config.mode === 'parallel';
  return !line.some((u) => !parallel || targetsOverlap(u.targets, unit.targets));
}
