/**
 * Reading a queue model: its defaults, queue order, and the questions every rule asks of it
 * (is an entry terminal, in a run, do two sets of impacted targets overlap, when does the clock
 * matter next). Nothing here changes a model.
 */
import {
  TERMINAL_STATES,
  type ImpactedTargets,
  type Mode,
  type PullRequestState,
} from '../contract/index.js';
import { activeFreeze } from './freezes.js';
import { testingTimeoutMs } from './timeout.js';
import type { Entry, QueueConfig, QueueModel, TestRun } from './types.js';

/** The defaults of a new queue (docs/decisions.md, "createQueue defaults"). */
export function defaultConfig(mode: Mode = 'single', concurrency = 1): QueueConfig {
  return {
    state: 'running',
    mode,
    pendingMode: null,
    concurrency,
    bisectionConcurrency: concurrency,
    bisectionConcurrencySet: false,
    testingTimeoutMinutes: 300,
    pendingFailureDepth: 0,
    canOptimisticallyMerge: false,
    batch: false,
    batchingMinSize: 4,
    batchingMaxWaitTimeMinutes: 5,
    requiredStatuses: null,
    directMergeMode: 'off',
    optimizationMode: 'off',
    mergeMethod: 'squash',
    createPrsForTestingBranches: true,
    commentsEnabled: true,
    commandsEnabled: true,
    statusCheckEnabled: true,
    extensionEnabled: true,
    enqueueingLabel: 'railyard-merge-queue-submit',
    labelCommandsEnabled: true,
    stateLabelsEnabled: false,
    flakyPolicy: 'off',
    flakyReportGraceSeconds: 120,
    flakyRetries: 0,
    probationThreshold: null,
    freezes: [],
    freezeBypassPriority: 0,
  };
}

export function newQueueModel(branch: string, mode?: Mode, concurrency?: number): QueueModel {
  return { branch, config: defaultConfig(mode, concurrency), entries: [], runs: [], nextSeq: 1 };
}

export const isTerminal = (state: PullRequestState): boolean => TERMINAL_STATES.includes(state);

/** The states of an entry that belongs to a test run (being tested or waiting on its result). */
export const IN_RUN: ReadonlySet<PullRequestState> = new Set(['testing', 'tests_passed', 'pending_failure']);

/**
 * Entries still in the queue (not terminal), in queue order: entries being tested keep the order
 * their runs started in; the others follow by priority value, then submission.
 */
export function activeEntries(model: QueueModel): Entry[] {
  const runSeq = new Map(model.runs.map((r) => [r.id, r] as const));
  const inRun: Entry[] = [];
  const rest: Entry[] = [];
  for (const e of model.entries) {
    if (isTerminal(e.state)) continue;
    const run = e.testRunId ? runSeq.get(e.testRunId) : undefined;
    if (IN_RUN.has(e.state) && run) inRun.push(e);
    else rest.push(e);
  }
  const position = (e: Entry) => {
    const run = runSeq.get(e.testRunId as string) as TestRun;
    return run.seq * 10_000 + run.prNumbers.indexOf(e.prNumber);
  };
  inRun.sort((a, b) => position(a) - position(b));
  rest.sort(compareEntries);
  return [...inRun, ...rest];
}

/**
 * Every entry of the queue in the order a person reads it (listPullRequests): the line as
 * `activeEntries` orders it (runs in the order they started, then the pending PRs by priority and
 * submission), then the PRs waiting outside it (`not_ready`, by priority and submission), then the
 * PRs that left the queue, in the order they left (then by submission).
 */
export function listOrder(model: QueueModel): Entry[] {
  const active = activeEntries(model);
  const line = active.filter((e) => e.state !== 'not_ready');
  const waiting = active.filter((e) => e.state === 'not_ready');
  const gone = model.entries
    .filter((e) => isTerminal(e.state))
    .sort((a, b) => (a.concludedAt ?? 0) - (b.concludedAt ?? 0) || a.seq - b.seq);
  return [...line, ...waiting, ...gone];
}

export function compareEntries(a: Entry, b: Entry): number {
  return a.priority.value - b.priority.value || a.seq - b.seq;
}

/** The current entry of a PR: the active one, else the most recent submission. */
export function findEntry(model: QueueModel, prNumber: number): Entry | undefined {
  let latest: Entry | undefined;
  for (const e of model.entries) {
    if (e.prNumber !== prNumber) continue;
    if (!isTerminal(e.state)) return e;
    if (!latest || e.seq > latest.seq) latest = e;
  }
  return latest;
}

/** Whether two sets of impacted targets overlap: "ALL" overlaps everything but an empty list. */
export function targetsOverlap(a: ImpactedTargets | null, b: ImpactedTargets | null): boolean {
  if (a === null || b === null) return true; // unknown targets: assume the worst
  if ((Array.isArray(a) && a.length === 0) || (Array.isArray(b) && b.length === 0)) return false;
  if (a === 'ALL' || b === 'ALL') return true;
  const small = a.length <= b.length ? a : b;
  const large = new Set(a.length <= b.length ? b : a);
  return small.some((t) => large.has(t));
}

/** The impacted targets of several PRs tested together: unknown if any is unknown. */
export function unionTargets(list: (ImpactedTargets | null)[]): ImpactedTargets | null {
  const out = new Set<string>();
  for (const t of list) {
    if (t === null) return null;
    if (t === 'ALL') return 'ALL';
    for (const x of t) out.add(x);
  }
  return [...out];
}

/**
 * The earliest time at which a `tick` changes something (a batch stops waiting, a run times out,
 * with `now`: a freeze holding a passed run ends), or null when nothing is waiting on the clock.
 */
export function nextDeadline(model: QueueModel, now?: number): number | null {
  let next: number | null = null;
  const consider = (t: number) => {
    if (next === null || t < next) next = t;
  };
  const timeout = testingTimeoutMs(model.config);
  if (timeout > 0)
    for (const r of model.runs) if (r.status === 'in_progress') consider(r.startedAt + timeout);
  if (model.config.batch) {
    const wait = model.config.batchingMaxWaitTimeMinutes * 60_000;
    for (const e of model.entries)
      if (e.state === 'pending' && e.admittedAt !== null) consider(e.admittedAt + wait);
  }
  if (
    now !== undefined &&
    model.config.freezes?.length &&
    model.runs.some((r) => r.status === 'succeeded' && !r.mergeRequested)
  ) {
    const freeze = activeFreeze(model.config.freezes, now);
    if (freeze) consider(freeze.until);
  }
  return next;
}
