/**
 * Scheduling and batching: while slots are free, pending PRs start test runs in queue order
 * (priority, then submission). Bisection groups go first, on their own slots. Each unit of the
 * main line — one PR, or a batch of up to `batchingMinSize` PRs when batching — is tested on the
 * target plus the units of the line ahead of it that it depends on (all of them in single mode;
 * those with overlapping impacted targets in parallel mode). A batch waits to fill up for
 * `batchingMaxWaitTimeMinutes` unless the queue drains. A unit that cannot start holds back the
 * units behind it that overlap it, so the queue order is kept. A stack (stacks.ts) is never split:
 * it joins a unit whole, bottom first, at the place of its first PR in the queue order; a batch
 * takes a whole stack only while it fits (a stack alone may be larger than a batch).
 */
import type { ImpactedTargets } from '../../contract/index.js';
import { compareEntries, targetsOverlap, unionTargets } from '../model.js';
import type { Entry } from '../types.js';
import { inLine, successors, type Unit, type WorkingCopy } from '../working-copy.js';
import { startBisections } from './bisection.js';
import { Slots } from './lanes.js';
import { Stacks } from './stacks.js';

/** Starts test runs for pending PRs in queue order while slots are free: bisection groups, then the line. */
export function startRuns(w: WorkingCopy): void {
  if (w.config.state === 'paused') return;
  const pending = w.entries.filter((e) => e.state === 'pending').sort(compareEntries);
  if (!pending.length) return;
  const slots = new Slots(w.entries, w.runs, w.config, w.config.mode === 'parallel' ? w.laneOf() : undefined);
  startBisections(w, pending, slots);
  startLine(w, pending, slots);
}

/** The main line: units of pending PRs (batches when batching), each on the target plus the line ahead of it. */
function startLine(w: WorkingCopy, pending: Entry[], slots: Slots): void {
  // A unit starts only in a lane with a free main slot (checked on its first PR below): when no
  // pending PR has one, nothing can start, and the line need not be built. With a standing
  // backlog that is most rounds of most steps (every slot busy).
  if (!pending.some((e) => !e.bisectGroup && slots.free(e, false))) return;
  const parallel = w.config.mode === 'parallel';
  const line = viableLine(w);
  const taken = new Set<string>();
  const blocked = new Blocked(parallel);
  const draining = w.config.state === 'draining' || w.config.state === 'switching_modes';
  const waitMs = w.config.batchingMaxWaitTimeMinutes * 60_000;
  const stacks = new Stacks(w.entries);
  /** The PRs that start together with `e`: its whole stack, bottom first (null when part of it is not pending). */
  const blockOf = (e: Entry): Entry[] | null => {
    if (!stacks.stacked(e)) return [e];
    const block = stacks.members(e).map((m) => w.current(m));
    return block.every((m) => m.state === 'pending' && !m.bisectGroup) ? block : null;
  };

  for (const entry of pending) {
    if (entry.bisectGroup || taken.has(entry.id)) continue;
    const first = blockOf(entry);
    if (!first) {
      for (const m of stacks.members(entry)) taken.add(m.id);
      blocked.add(unionTargets(stacks.members(entry).map((m) => m.impactedTargets)));
      continue;
    }
    let members: Entry[] = first;
    const alone = first.some((m) => m.noBatch);
    if (w.config.batch && !alone) {
      for (const e of pending) {
        if (members.length >= w.config.batchingMinSize) break;
        if (members.includes(e) || taken.has(e.id) || e.noBatch || e.bisectGroup || e.seq < 0) continue;
        if (compareEntries(e, entry) < 0) continue;
        if (parallel && !targetsOverlap(e.impactedTargets, entry.impactedTargets)) continue;
        const block = blockOf(e);
        if (!block || block.some((m) => m.noBatch || taken.has(m.id))) continue;
        if (members.length + block.length > w.config.batchingMinSize) continue;
        members = [...members, ...block.filter((m) => !members.includes(m))];
      }
    }
    for (const m of members) taken.add(m.id);
    const targets = unionTargets(members.map((m) => m.impactedTargets));
    // From here on, a unit that does not start holds back the overlapping units behind it.
    if (blocked.holds(targets)) {
      blocked.add(targets);
      continue;
    }
    // A batch waits to fill up, unless the queue is draining or its oldest PR waited long enough.
    if (w.config.batch && !alone && members.length < w.config.batchingMinSize && !draining) {
      const oldest = Math.min(...members.map((m) => (m.restarts ? -Infinity : (m.admittedAt ?? w.ctx.now))));
      if (w.ctx.now - oldest < waitMs) {
        blocked.add(targets);
        continue;
      }
    }
    if (!slots.free(entry, false)) {
      blocked.add(targets);
      continue;
    }
    const deps = parallel ? dependencyClosure(line, targets) : line;
    // Do not stack new work on a failure beyond the successors pendingFailureDepth asks for (the hold's window).
    const holdsBack = deps.some(
      (u) => u.run.status === 'failed' && successors(u, line).length >= w.config.pendingFailureDepth,
    );
    if (holdsBack) {
      blocked.add(targets);
      continue;
    }
    const run = w.launch(
      members,
      deps.flatMap((u) => u.members.map((m) => m.prNumber)),
      false,
    );
    line.push({ run, members: members.map((m) => w.current(m)), targets });
    slots.take(entry, false);
  }
}

/**
 * The units of the line a new unit may be built on. Without optimistic merging and without a
 * hold (`pendingFailureDepth` 0), a failed unit can no longer land — it fails, is bisected, or
 * restarts once the units ahead are judged — and neither can the units built on it: new units
 * leave them out instead of waiting behind them.
 */
function viableLine(w: WorkingCopy): Unit[] {
  const line = w.units().filter(inLine);
  if (w.config.pendingFailureDepth > 0 || w.config.canOptimisticallyMerge) return line;
  const doomed = new Set<number>();
  for (const u of line) {
    if (u.run.status === 'failed' || u.run.basePrNumbers.some((pr) => doomed.has(pr)))
      for (const m of u.members) doomed.add(m.prNumber);
  }
  return line.filter((u) => !doomed.has(u.members[0].prNumber));
}

/** Parallel mode: the units a new unit with `targets` depends on, directly or through others. */
function dependencyClosure(units: Unit[], targets: ImpactedTargets | null): Unit[] {
  const chosen = new Set<Unit>();
  const frontier: (ImpactedTargets | null)[] = [targets];
  while (frontier.length) {
    const t = frontier.pop() as ImpactedTargets | null;
    for (const u of units) {
      if (chosen.has(u) || !targetsOverlap(t, u.targets)) continue;
      chosen.add(u);
      frontier.push(u.targets);
    }
  }
  return units.filter((u) => chosen.has(u));
}

/**
 * The impacted targets of the units of the line that could not start: a later unit waits behind
 * them when it overlaps one of them (in single mode, always). One lookup per unit instead of
 * `targetsOverlap` against each blocked unit, with the same answers.
 */
class Blocked {
  private any = false;
  /** A blocked unit overlaps every non-empty list ("ALL", or unknown targets). */
  private all = false;
  /** A blocked unit has unknown targets: it overlaps everything, even `[]`. */
  private unknown = false;
  /** A blocked unit has a non-empty list, "ALL" or unknown targets: "ALL" overlaps it. */
  private nonEmpty = false;
  private readonly names = new Set<string>();

  constructor(private readonly parallel: boolean) {}

  /** Records a unit that could not start. */
  add(targets: ImpactedTargets | null): void {
    this.any = true;
    if (targets === null) this.unknown = this.all = this.nonEmpty = true;
    else if (targets === 'ALL') this.all = this.nonEmpty = true;
    else if (targets.length > 0) {
      this.nonEmpty = true;
      for (const t of targets) this.names.add(t);
    }
  }

  /** Whether a unit with `targets` must wait behind a unit that could not start. */
  holds(targets: ImpactedTargets | null): boolean {
    if (!this.any) return false;
    if (!this.parallel || targets === null || this.unknown) return true;
    if (targets === 'ALL') return this.nonEmpty;
    return targets.length > 0 && (this.all || targets.some((t) => this.names.has(t)));
  }
}
