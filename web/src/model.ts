// The dashboard's pure logic (no DOM, no JSX): the queue's graph layout and the reading of a PR's
// history. Unit-tested from test/web/model.test.ts.
import type { QueueListItem, TestingDetailsResponse } from '../../src/contract/index.js';

export interface RunBox {
  id: string;
  prs: QueueListItem[];
  details: TestingDetailsResponse | null;
  /** Runs (ids) whose PRs form this run's predicted base. */
  baseRuns: string[];
}

/**
 * The queue as a graph: consecutive PRs of one test run form a box; a run is stacked on the run
 * holding the last PR of its predicted base (dependentPrs); a run built on the target branch
 * alone starts a new lane (parallel mode, or the first run). PRs without a run wait below.
 */
export function layout(
  prs: QueueListItem[],
  detailsOf: (id: string) => TestingDetailsResponse | null,
): { lanes: RunBox[][]; bisection: RunBox[]; waiting: QueueListItem[] } {
  const runs: RunBox[] = [];
  const byId = new Map<string, RunBox>();
  const waiting: QueueListItem[] = [];
  for (const p of prs) {
    if (!p.testRunId || p.state === 'pending' || p.state === 'not_ready') {
      waiting.push(p);
      continue;
    }
    let run = byId.get(p.testRunId);
    if (!run) {
      run = { id: p.testRunId, prs: [], details: detailsOf(p.testRunId), baseRuns: [] };
      byId.set(run.id, run);
      runs.push(run);
    }
    run.prs.push(p);
  }
  // A bisection run tests PRs split out of a failed batch: they keep BISECTION_REQUIRED as their
  // reason while it runs. Drawn apart from the main line.
  const bisection = runs.filter((r) => r.prs.every((p) => p.stateReason === 'BISECTION_REQUIRED'));
  const main = runs.filter((r) => !bisection.includes(r));
  const runOfPr = new Map<number, RunBox>();
  for (const r of main) for (const p of r.prs) runOfPr.set(p.prNumber, r);
  const laneOf = new Map<string, number>();
  const lanes: RunBox[][] = [];
  let prev: RunBox | undefined;
  for (const r of main) {
    // Until its details are read, a run is drawn on the run before it.
    const base = r.details
      ? (r.details.dependentPrs ?? [])
      : prev
        ? [prev.prs[prev.prs.length - 1].prNumber]
        : [];
    prev = r;
    const parent = base.length ? runOfPr.get(base[base.length - 1]) : undefined;
    r.baseRuns = [...new Set(base.flatMap((n) => (runOfPr.get(n) ? [runOfPr.get(n)!.id] : [])))];
    let lane = parent ? laneOf.get(parent.id) : undefined;
    if (lane === undefined) {
      lane = lanes.length;
      lanes.push([]);
    }
    laneOf.set(r.id, lane);
    lanes[lane].push(r);
  }
  return { lanes, bisection, waiting };
}

export interface Transition {
  state: string;
  previousState: string | null;
  reason: string | null;
  at: string | null;
  testRunId: string | null;
  /** What went wrong, for people (failures): the conflicting PR and files, the failed checks… */
  detail: string | null;
  /** The submission it belongs to: a new one after each resubmission. */
  queueEntryId: string | null;
}

/**
 * Reads a history answer leniently: getPullRequestHistory's `{ prNumber, transitions: [...] }`
 * (or a bare list), skipping rows without a state.
 */
export function transitionsOf(history: unknown): Transition[] {
  const h = history as Record<string, unknown> | unknown[] | null;
  const list = Array.isArray(h)
    ? h
    : h && typeof h === 'object'
      ? ((Object.values(h).find(Array.isArray) as unknown[] | undefined) ?? [])
      : [];
  return list.flatMap((raw) => {
    if (!raw || typeof raw !== 'object') return [];
    const t = raw as Record<string, unknown>;
    const str = (...keys: string[]) => {
      for (const k of keys) if (typeof t[k] === 'string') return t[k] as string;
      return null;
    };
    const state = str('state', 'to', 'toState', 'newState');
    if (!state) return [];
    return [
      {
        state,
        previousState: str('previousState'),
        reason: str('reason', 'stateReason'),
        at: str('at', 'time', 'changedAt', 'stateChangedAt', 'timestamp'),
        testRunId: str('testRunId'),
        detail: str('detail'),
        queueEntryId: str('queueEntryId'),
      },
    ];
  });
}

/** The last `count` lines of a check's output (a trailing newline does not count as a line), and how many are left out. */
export function lastLines(text: string, count: number): { shown: string; hidden: number } {
  const lines = text.replace(/\n$/, '').split('\n');
  if (lines.length <= count) return { shown: text, hidden: 0 };
  return { shown: lines.slice(-count).join('\n') + '\n', hidden: lines.length - count };
}
