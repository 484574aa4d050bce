/**
 * Lanes and test slots. In single mode the queue is one lane. In parallel mode PRs whose impacted
 * targets overlap, directly or through others, share a lane, and lanes that share nothing are
 * tested and merged independently. `concurrency` main runs and `bisectionConcurrency` bisection
 * runs may be in progress in each lane (README, "The merge queue").
 */
import { IN_RUN, isTerminal } from '../model.js';
import type { Entry, QueueConfig, QueueModel, TestRun } from '../types.js';

/**
 * Test slots in use per lane. The queue is one lane in single mode. In parallel mode a lane is a
 * connected component of the impacted-target overlap graph among the admitted entries, and
 * `concurrency` and `bisectionConcurrency` apply to each lane on its own (README, "The merge queue").
 */
export class Slots {
  private readonly laneOf: (entry: Entry) => string;
  private readonly used = new Map<string, { main: number; bisection: number }>();

  constructor(
    entries: readonly Entry[],
    runs: readonly TestRun[],
    private readonly config: QueueConfig,
  ) {
    this.laneOf = config.mode === 'parallel' ? lanes(entries) : () => '';
    const memberOf = new Map<string, Entry>();
    for (const e of entries) if (e.testRunId && IN_RUN.has(e.state)) memberOf.set(e.testRunId, e);
    for (const run of runs) {
      const member = run.status === 'in_progress' ? memberOf.get(run.id) : undefined;
      if (member) this.take(member, run.isBisection);
    }
  }

  /** Whether the lane of `entry` has a free main (or bisection) slot. */
  free(entry: Entry, isBisection: boolean): boolean {
    const used = this.used.get(this.laneOf(entry));
    return isBisection
      ? (used?.bisection ?? 0) < this.config.bisectionConcurrency
      : (used?.main ?? 0) < this.config.concurrency;
  }

  /** Counts a run started for `entry` against its lane. */
  take(entry: Entry, isBisection: boolean): void {
    const lane = this.laneOf(entry);
    const used = this.used.get(lane) ?? { main: 0, bisection: 0 };
    if (isBisection) used.bisection++;
    else used.main++;
    this.used.set(lane, used);
  }
}

/**
 * Parallel mode: a number for the lane of each admitted entry (entry id → 1, 2, …), numbered in
 * the order of `ordered` (queue order), so the lane of the first PR of the line is 1. The numbers
 * are for people reading the queue: lanes join and split as PRs come and go, and so do they.
 * Empty in single mode (one lane).
 */
export function laneNumbers(model: QueueModel, ordered: readonly Entry[]): Map<string, number> {
  const out = new Map<string, number>();
  if (model.config.mode !== 'parallel') return out;
  const laneOf = lanes(model.entries);
  const numbers = new Map<string, number>();
  for (const e of ordered) {
    if (isTerminal(e.state) || e.state === 'not_ready') continue;
    const lane = laneOf(e);
    if (!numbers.has(lane)) numbers.set(lane, numbers.size + 1);
    out.set(e.id, numbers.get(lane) as number);
  }
  return out;
}

/**
 * Parallel mode: the lane of each admitted entry, as a union-find over entries and target names.
 * Entries sharing a target are joined, "ALL" joins every entry with a non-empty list (as
 * `targetsOverlap`; unknown targets are never admitted in parallel mode and count as "ALL"), `[]`
 * joins nothing, and the PRs of one run or one bisection group are in one lane.
 */
function lanes(entries: readonly Entry[]): (entry: Entry) => string {
  const parent = new Map<string, string>();
  const root = (node: string): string => {
    let top = node;
    for (let up = parent.get(top); up !== undefined; up = parent.get(top)) top = up;
    for (let at = node; at !== top; ) {
      const up = parent.get(at) as string;
      parent.set(at, top);
      at = up;
    }
    return top;
  };
  const join = (a: string, b: string) => {
    const [ra, rb] = [root(a), root(b)];
    if (ra !== rb) parent.set(ra, rb);
  };
  const admitted = entries.filter((e) => !isTerminal(e.state) && e.state !== 'not_ready');
  const anyAll = admitted.some((e) => !Array.isArray(e.impactedTargets));
  for (const e of admitted) {
    const node = `e:${e.id}`;
    const targets = e.impactedTargets;
    if (!Array.isArray(targets)) join(node, 'ALL');
    else {
      for (const target of targets) join(node, `t:${target}`);
      if (anyAll && targets.length > 0) join(node, 'ALL');
    }
    if (e.testRunId && IN_RUN.has(e.state)) join(node, `r:${e.testRunId}`);
    if (e.bisectGroup) join(node, `g:${e.bisectGroup}`);
  }
  return (e) => root(`e:${e.id}`);
}
