/**
 * Lanes and test slots. In single mode the queue is one lane. In parallel mode PRs whose impacted
 * targets overlap, directly or through others, share a lane, and lanes that share nothing are
 * tested and merged independently. `concurrency` main runs and `bisectionConcurrency` bisection
 * runs may be in progress in each lane (docs/merge-queue.md, "Lanes").
 */
import { IN_RUN, isTerminal } from '../model.js';
import type { Entry, QueueConfig, QueueModel, TestRun } from '../types.js';

/**
 * Test slots in use per lane. The queue is one lane in single mode. In parallel mode a lane is a
 * connected component of the impacted-target overlap graph among the admitted entries, and
 * `concurrency` and `bisectionConcurrency` apply to each lane on its own (docs/merge-queue.md, "Lanes").
 */
export class Slots {
  private readonly laneOf: (entry: Entry) => number | string;
  private readonly used = new Map<number | string, { main: number; bisection: number }>();

  /** `laneOf`: the lanes of `entries` when the caller has them already (parallel mode only). */
  constructor(
    entries: readonly Entry[],
    runs: readonly TestRun[],
    private readonly config: QueueConfig,
    laneOf?: (entry: Entry) => number | string,
  ) {
    this.laneOf = config.mode === 'parallel' ? (laneOf ?? lanes(entries)) : () => '';
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
  const numbers = new Map<number | string, number>();
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
 * joins nothing, and the PRs of one run, one bisection group or one stack are in one lane.
 *
 * Two entries are in one lane when their answers are equal; the answer means nothing else. Nodes
 * are numbers (one per entry, target, run and group) in an array, not strings in a map: `startRuns`
 * builds this for every round of every step in parallel mode, and the string keys were most of the
 * simulator's time (`railyard sim --mode parallel`). An entry that is not admitted is a lane of its
 * own (its id, which no number equals).
 */
export function lanes(entries: readonly Entry[]): (entry: Entry) => number | string {
  const parent: number[] = [];
  const node = () => {
    parent.push(parent.length);
    return parent.length - 1;
  };
  const named = (nodes: Map<string, number>, name: string) => {
    let n = nodes.get(name);
    if (n === undefined) nodes.set(name, (n = node()));
    return n;
  };
  const root = (n: number): number => {
    while (parent[n] !== n) {
      const up = parent[parent[n]];
      parent[n] = up; // path halving
      n = up;
    }
    return n;
  };
  const join = (a: number, b: number) => {
    const ra = root(a);
    const rb = root(b);
    if (ra !== rb) parent[ra] = rb;
  };
  const ALL = node();
  const byEntry = new Map<string, number>();
  const targetNodes = new Map<string, number>();
  const runNodes = new Map<string, number>();
  const groupNodes = new Map<string, number>();
  const admitted = entries.filter((e) => !isTerminal(e.state) && e.state !== 'not_ready');
  const anyAll = admitted.some((e) => !Array.isArray(e.impactedTargets));
  for (const e of admitted) {
    const at = named(byEntry, e.id);
    const targets = e.impactedTargets;
    if (!Array.isArray(targets)) join(at, ALL);
    else {
      for (const target of targets) join(at, named(targetNodes, target));
      if (anyAll && targets.length > 0) join(at, ALL);
    }
    if (e.testRunId && IN_RUN.has(e.state)) join(at, named(runNodes, e.testRunId));
    if (e.bisectGroup) join(at, named(groupNodes, e.bisectGroup));
  }
  // The PRs of a stack are tested together (stacks.ts): one lane.
  const prNodes = new Map<number, number>();
  for (const e of admitted) prNodes.set(e.prNumber, byEntry.get(e.id) as number);
  for (const e of admitted) {
    const on = e.pr.stackedOn;
    const below = on === undefined || on === null ? undefined : prNodes.get(on);
    if (below !== undefined) join(byEntry.get(e.id) as number, below);
  }
  return (e) => {
    const at = byEntry.get(e.id);
    return at === undefined ? e.id : root(at);
  };
}
