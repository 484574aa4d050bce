import { QUEUED_REASONS, resolvePriority, TERMINAL_STATES, type FailureReason, type ImpactedTargets, type Mode, type PullRequestState, type QueuedReason, type Readiness } from '../contract/index.js';
import {
  EngineRejection,
  type ConfigPatch,
  type Effect,
  type EngineEvent,
  type Entry,
  type QueueConfig,
  type QueueModel,
  type ReasonCode,
  type StepContext,
  type StepResult,
  type TestRun,
} from './types.js';

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
  };
}

export function newQueueModel(branch: string, mode?: Mode, concurrency?: number): QueueModel {
  return { branch, config: defaultConfig(mode, concurrency), entries: [], runs: [], nextSeq: 1 };
}

export const isTerminal = (state: PullRequestState): boolean => TERMINAL_STATES.includes(state);

/** Restart reasons that also explain the restart of the units built on top of the restarted one. */
const PASSED_ON_REASONS: ReadonlySet<string> = new Set<QueuedReason>([
  'MANUAL_PUSH_TO_TARGET_BRANCH',
  'SKIP_THE_LINE_INTERRUPTED',
  'TESTS_RESTARTED_BY_USER',
  'TESTS_RESTARTED_BY_API_REQUEST',
  'PREREQUISITE_MERGE_ITEM_CANCELLED',
]);

const IN_RUN: ReadonlySet<PullRequestState> = new Set(['testing', 'tests_passed', 'pending_failure']);

/** Why the units built on `entry` restart when it no longer lands ahead of them. */
function restartReason(entry: Entry): QueuedReason {
  if (entry.state === 'failed') return 'PREREQUISITE_MERGE_ITEM_FAILED';
  if (entry.state === 'cancelled') return 'PREREQUISITE_MERGE_ITEM_CANCELLED';
  return entry.reason && PASSED_ON_REASONS.has(entry.reason) ? (entry.reason as QueuedReason) : 'PREREQUISITE_MERGE_ITEM_FAILED';
}

/**
 * A PR of a failed combination that may still land: split out of the batch in this submission,
 * admitted and not concluded (in its bisection, or back in the main line after its group passed).
 */
function isCandidate(entry: Entry | undefined): entry is Entry {
  return entry !== undefined && entry.bisected === true && !isTerminal(entry.state) && entry.state !== 'not_ready';
}

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

/** Readiness as the contract reports it. */
export function readinessOf(model: QueueModel, entry: Entry): Readiness {
  const requiresImpactedTargets = model.config.mode === 'parallel';
  return {
    hasImpactedTargets: entry.impactedTargets !== null,
    requiresImpactedTargets,
    doesBaseBranchMatch: entry.pr.baseBranch === model.branch,
    gitHubMergeability: entry.pr.mergeability,
  };
}

function isReady(model: QueueModel, entry: Entry): boolean {
  const r = readinessOf(model, entry);
  return (
    r.doesBaseBranchMatch && r.gitHubMergeability === 'mergeable' && (!r.requiresImpactedTargets || r.hasImpactedTargets === true)
  );
}

/** Whether PRs are admitted (pending or further): not-ready PRs wait outside and do not hold a mode switch. */
function hasAdmittedWork(model: QueueModel): boolean {
  return model.entries.some((e) => !isTerminal(e.state) && e.state !== 'not_ready');
}

/** Whether the queue admits a not-ready entry into pending now. */
function admitsNewWork(model: QueueModel): boolean {
  return model.config.state === 'running' || model.config.state === 'paused';
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

function unionTargets(list: (ImpactedTargets | null)[]): ImpactedTargets | null {
  const out = new Set<string>();
  for (const t of list) {
    if (t === null) return null;
    if (t === 'ALL') return 'ALL';
    for (const x of t) out.add(x);
  }
  return [...out];
}

/**
 * The earliest time at which a `tick` changes something (a batch stops waiting, a run times out),
 * or null when nothing is waiting on the clock.
 */
export function nextDeadline(model: QueueModel): number | null {
  let next: number | null = null;
  const consider = (t: number) => {
    if (next === null || t < next) next = t;
  };
  const timeout = model.config.testingTimeoutMinutes * 60_000;
  if (timeout > 0) for (const r of model.runs) if (r.status === 'in_progress') consider(r.startedAt + timeout);
  if (model.config.batch) {
    const wait = model.config.batchingMaxWaitTimeMinutes * 60_000;
    for (const e of model.entries) if (e.state === 'pending' && e.admittedAt !== null) consider(e.admittedAt + wait);
  }
  return next;
}

/**
 * Applies one event. Pure: the same (model, event, ctx) always gives the same result.
 * Throws EngineRejection for commands that cannot apply (unknown PR, terminal entry).
 */
export function step(model: QueueModel, event: EngineEvent, ctx: StepContext): StepResult {
  const tx = new Transition(model, ctx);
  switch (event.type) {
    case 'submit':
      tx.submit(event.prNumber, event.pr, event.priority, event.noBatch);
      break;
    case 'cancel':
      tx.cancel(event.prNumber, event.reason);
      break;
    case 'restart':
      tx.restart(event.prNumber, event.reason);
      break;
    case 'impactedTargets':
      tx.impactedTargets(event.prNumber, event.sha, event.targets);
      break;
    case 'prUpdated':
      tx.prUpdated(event.prNumber, event.pr);
      break;
    case 'updateConfig':
      tx.updateConfig(event.patch);
      break;
    case 'tick':
      tx.tick();
      break;
    case 'testRunStarted':
      tx.testRunStarted(event.runId, event.branch, event.sha);
      break;
    case 'testRunStartFailed':
      tx.testRunStartFailed(event.runId, event.reason, event.prNumber);
      break;
    case 'testRunFinished':
      tx.testRunFinished(event.runId, event.passed, event.checks, event.reason);
      break;
    case 'mergeSucceeded':
      tx.mergeSucceeded(event.runId);
      break;
    case 'mergeFailed':
      tx.mergeFailed(event.runId, event.reason);
      break;
    case 'targetMoved':
      tx.restartAll('MANUAL_PUSH_TO_TARGET_BRANCH');
      break;
  }
  tx.settle();
  return tx.result();
}

/** A test unit being tested or waiting on its result: a run and the entries in it, in queue order. */
interface Unit {
  run: TestRun;
  members: Entry[];
  targets: ImpactedTargets | null;
}

/**
 * Whether a unit is in the main line, whose units are tested on the target plus the line ahead of
 * them and land in order: every main unit, and a bisection group once it is landing. Other
 * bisection groups are tested off the line: nothing in the line is built on them.
 */
const inLine = (unit: Unit): boolean => !unit.run.isBisection || unit.run.mergeRequested;

/** Mutable working copy of a model for one step; entries and runs are copied on first write. */
class Transition {
  private readonly entries: Entry[];
  private readonly runs: TestRun[];
  private config: QueueConfig;
  private nextSeq: number;
  private readonly effects: Effect[] = [];

  constructor(
    private readonly original: QueueModel,
    private readonly ctx: StepContext,
  ) {
    this.entries = [...original.entries];
    this.runs = [...original.runs];
    this.config = original.config;
    this.nextSeq = original.nextSeq;
    for (let i = 0; i < this.entries.length; i++) this.index(this.entries[i], i);
  }

  // Lookups by entry id and by PR number (performance only: entries are replaced in place, never moved).
  private readonly byId = new Map<string, number>();
  private readonly byPr = new Map<number, number[]>();

  private index(entry: Entry, at: number): void {
    if (!this.byId.has(entry.id)) this.byId.set(entry.id, at);
    const list = this.byPr.get(entry.prNumber);
    if (list) list.push(at);
    else this.byPr.set(entry.prNumber, [at]);
  }

  /** The current entry of a PR (non-terminal first, else the latest) without building a model. */
  private find(prNumber: number): Entry | undefined {
    const list = this.byPr.get(prNumber);
    if (!list) return undefined;
    let latest: Entry | undefined;
    for (const i of list) {
      const e = this.entries[i];
      if (!isTerminal(e.state)) return e;
      if (!latest || e.seq > latest.seq) latest = e;
    }
    return latest;
  }

  result(): StepResult {
    return { model: this.model, effects: this.effects };
  }

  private get model(): QueueModel {
    return { ...this.original, config: this.config, entries: this.entries, runs: this.runs, nextSeq: this.nextSeq };
  }

  private update(entry: Entry, patch: Partial<Entry>): Entry {
    const at = this.byId.get(entry.id);
    const index = at !== undefined && this.entries[at] === entry ? at : this.entries.indexOf(entry);
    const next = { ...entry, ...patch };
    this.entries[index] = next;
    return next;
  }

  private updateRun(run: TestRun, patch: Partial<TestRun>): TestRun {
    const index = this.runs.indexOf(run);
    const next = { ...run, ...patch };
    this.runs[index] = next;
    return next;
  }

  private run(runId: string): TestRun | undefined {
    return this.runs.find((r) => r.id === runId);
  }

  private setState(entry: Entry, to: PullRequestState, reason: ReasonCode | null, extra: Partial<Entry> = {}): Entry {
    const now = this.ctx.now;
    const patch: Partial<Entry> = { state: to, reason, stateChangedAt: now, ...extra };
    if (to === 'pending' && entry.admittedAt === null) patch.admittedAt = now;
    if (to === 'pending' && IN_RUN.has(entry.state)) {
      patch.restarts = (entry.restarts ?? 0) + 1;
      patch.testingStartedAt = null;
    }
    if (isTerminal(to)) patch.concludedAt = now;
    this.effects.push({ type: 'stateChanged', entryId: entry.id, prNumber: entry.prNumber, from: entry.state, to, reason });
    return this.update(entry, patch);
  }

  private active(prNumber: number): Entry {
    const entry = findEntry(this.model, prNumber);
    if (!entry) throw new EngineRejection('not_found', `pull request #${prNumber} was never submitted to the ${this.original.branch} queue`);
    if (isTerminal(entry.state))
      throw new EngineRejection('invalid', `pull request #${prNumber} is not in the queue: it is ${entry.state}`);
    return entry;
  }

  // ------------------------------------------------------------------ commands

  submit(prNumber: number, pr: Entry['pr'], priority: Entry['priority'] | undefined, noBatch: boolean | undefined): void {
    const existing = findEntry(this.model, prNumber);
    if (existing && !isTerminal(existing.state)) {
      // Resubmitting a queued PR rewrites its priority and batching, nothing else.
      const patch: Partial<Entry> = { pr };
      if (priority) patch.priority = priority;
      if (noBatch !== undefined) patch.noBatch = noBatch;
      this.update(existing, patch);
      return;
    }
    const now = this.ctx.now;
    const entry: Entry = {
      id: this.ctx.newId(),
      prNumber,
      state: 'not_ready',
      reason: 'API_REQUESTED',
      stateChangedAt: now,
      submittedAt: now,
      seq: this.nextSeq++,
      priority: priority ?? resolvePriority(undefined),
      noBatch: noBatch ?? false,
      pr,
      // Impacted targets belong to a head SHA: an earlier submission's list still counts for the same SHA.
      impactedTargets: existing && existing.pr.headSha === pr.headSha ? existing.impactedTargets : null,
      testRunId: null,
      admittedAt: null,
      testingStartedAt: null,
      concludedAt: null,
      restarts: 0,
      bisectGroup: null,
      bisectKnownFailure: null,
      bisected: false,
    };
    this.entries.push(entry);
    this.index(entry, this.entries.length - 1);
    this.effects.push({ type: 'stateChanged', entryId: entry.id, prNumber, from: null, to: 'not_ready', reason: 'API_REQUESTED' });
  }

  cancel(prNumber: number, reason: Entry['reason'] & string): void {
    const entry = this.active(prNumber);
    this.setState(entry, 'cancelled', reason);
  }

  restart(prNumber: number, reason: QueuedReason): void {
    const entry = this.active(prNumber);
    if (entry.state === 'not_ready') return; // nothing to restart: it has not been admitted yet
    const unit = entry.testRunId && IN_RUN.has(entry.state) ? this.units().find((u) => u.run.id === entry.testRunId) : undefined;
    if (unit) {
      if (unit.run.mergeRequested) throw new EngineRejection('conflict', `pull request #${prNumber} is being merged`);
      this.restartUnit(unit, reason);
      return;
    }
    this.setState(entry, 'pending', reason, { testingStartedAt: null });
  }

  impactedTargets(prNumber: number, sha: string, targets: Entry['impactedTargets']): void {
    const entry = findEntry(this.model, prNumber);
    if (!entry) throw new EngineRejection('not_found', `pull request #${prNumber} was never submitted to the ${this.original.branch} queue`);
    // Targets are per head SHA: the last upload for the current head wins; an upload for another SHA is ignored.
    if (entry.pr.headSha !== sha) return;
    this.update(entry, { impactedTargets: targets });
  }

  prUpdated(prNumber: number, pr: Entry['pr']): void {
    const entry = findEntry(this.model, prNumber);
    if (!entry || isTerminal(entry.state)) return;
    if (!pr.open) {
      this.setState(entry, 'cancelled', 'PR_CLOSED', { pr });
      return;
    }
    if (pr.headSha !== entry.pr.headSha) {
      this.setState(entry, 'cancelled', 'PR_PUSHED_TO', { pr });
      return;
    }
    if (pr.baseBranch !== entry.pr.baseBranch && entry.state !== 'not_ready') {
      this.setState(entry, 'cancelled', 'PR_BASE_BRANCH_CHANGED', { pr });
      return;
    }
    this.update(entry, { pr });
  }

  updateConfig(patch: ConfigPatch): void {
    const { deleteRequiredStatuses, ...fields } = patch;
    const next: QueueConfig = { ...this.config };
    for (const [key, value] of Object.entries(fields) as [keyof typeof fields, unknown][]) {
      if (value === undefined) continue;
      (next as unknown as Record<string, unknown>)[key] = value;
    }
    if (fields.requiredStatuses !== undefined && fields.requiredStatuses !== null && fields.requiredStatuses.length === 0) {
      next.requiredStatuses = this.config.requiredStatuses; // [] is ignored: deleteRequiredStatuses drops the override
    }
    if (deleteRequiredStatuses) next.requiredStatuses = null;
    if (fields.bisectionConcurrency !== undefined) next.bisectionConcurrencySet = true;
    else if (!next.bisectionConcurrencySet) next.bisectionConcurrency = next.concurrency;

    // A mode change on a non-empty queue goes through switching_modes and flips once empty.
    if (this.config.state === 'switching_modes' && fields.state === undefined) next.state = 'switching_modes';
    if (fields.mode !== undefined) {
      if (fields.mode === this.config.mode) {
        // Switching back to the current mode cancels a pending switch.
        if (next.pendingMode !== null) {
          next.pendingMode = null;
          if (next.state === 'switching_modes') next.state = 'running';
        }
      } else if (hasAdmittedWork(this.model)) {
        next.mode = this.config.mode;
        next.pendingMode = fields.mode;
        if (fields.state === undefined) next.state = 'switching_modes';
      } else {
        next.pendingMode = null;
      }
    }
    this.config = next;
  }

  // ------------------------------------------------------------------ outcomes from the shell

  tick(): void {
    const timeout = this.config.testingTimeoutMinutes * 60_000;
    if (timeout <= 0) return;
    for (const run of [...this.runs]) {
      if (run.status === 'in_progress' && this.ctx.now - run.startedAt >= timeout) {
        this.effects.push({ type: 'cancelTestRun', runId: run.id });
        this.finishRun(run, false, 'TEST_RUN_TIMEOUT', run.checks);
      }
    }
  }

  testRunStarted(runId: string, branch: string, sha: string): void {
    const run = this.run(runId);
    if (!run || run.status !== 'in_progress') return;
    this.updateRun(run, { branch, sha });
  }

  testRunStartFailed(runId: string, reason: FailureReason, prNumber: number | undefined): void {
    const run = this.run(runId);
    if (!run || run.status !== 'in_progress') return;
    const unit = this.units().find((u) => u.run.id === runId);
    this.updateRun(run, { status: 'failed', finishedAt: this.ctx.now, failureReason: reason });
    if (!unit) return;
    const culprit = unit.members.find((m) => m.prNumber === prNumber);
    if (!culprit && prNumber !== undefined && run.basePrNumbers.includes(prNumber)) {
      // A PR it was built on conflicts (a bisection base PR that is tested in the line meanwhile):
      // that PR's own test fails on it; these go back to be built again.
      for (const m of unit.members) this.setState(m, 'pending', 'PREREQUISITE_MERGE_ITEM_FAILED');
      return;
    }
    if (culprit && unit.members.length > 1) {
      // One PR of a batch conflicts: it fails alone, the others go back to be tested without it.
      this.setState(culprit, 'failed', reason);
      for (const m of unit.members) if (m !== culprit) this.setState(this.current(m), 'pending', 'PREREQUISITE_MERGE_ITEM_FAILED');
      return;
    }
    for (const m of unit.members) this.setState(m, 'failed', reason);
  }

  testRunFinished(runId: string, passed: boolean, checks: TestRun['checks'] | undefined, reason: FailureReason | undefined): void {
    const run = this.run(runId);
    if (!run || run.status !== 'in_progress') return;
    this.finishRun(run, passed, passed ? null : (reason ?? 'TEST_RUN_REQUIRED_STATUS_FAILED'), checks ?? run.checks);
  }

  private finishRun(run: TestRun, passed: boolean, reason: FailureReason | null, checks: TestRun['checks']): void {
    const members = this.membersOf(run.id);
    this.updateRun(run, { status: passed ? 'succeeded' : 'failed', finishedAt: this.ctx.now, failureReason: reason, checks });
    for (const m of members) {
      if (passed) this.setState(m, 'tests_passed', null);
      else this.setState(m, 'pending_failure', reason);
    }
  }

  mergeSucceeded(runId: string): void {
    const run = this.run(runId);
    if (!run || !run.mergeRequested) return;
    for (const pr of run.mergePrNumbers ?? run.prNumbers) {
      const entry = findEntry(this.model, pr);
      if (entry && !isTerminal(entry.state)) this.setState(entry, 'merged', 'MERGE_GRAPH_MERGE');
    }
    // The bisection groups tested before this landing can no longer land as they were tested.
    for (const unit of this.units()) if (unit.run.isBisection && !unit.run.landedSince) this.updateRun(unit.run, { landedSince: true });
  }

  mergeFailed(runId: string, reason: 'target_moved' | 'error'): void {
    const run = this.run(runId);
    if (!run || !run.mergeRequested) return;
    this.updateRun(run, { mergeRequested: false, mergePrNumbers: null });
    if (reason === 'target_moved') {
      this.restartAll('MANUAL_PUSH_TO_TARGET_BRANCH');
      return;
    }
    for (const m of this.membersOf(runId)) this.setState(m, 'failed', 'GITHUB_API_MERGE_PR_FAILED');
  }

  /** Every unit goes back to pending (the target moved under it). */
  restartAll(reason: QueuedReason): void {
    for (const unit of this.units()) {
      if (unit.run.mergeRequested) this.updateRun(this.run(unit.run.id) as TestRun, { mergeRequested: false, mergePrNumbers: null });
      this.restartUnit(unit, reason);
    }
  }

  // ------------------------------------------------------------------ scheduling

  private current(entry: Entry): Entry {
    const at = this.byId.get(entry.id);
    return (at === undefined ? undefined : this.entries[at]) as Entry;
  }

  private membersOf(runId: string): Entry[] {
    const run = this.run(runId);
    const members = this.entries.filter((e) => e.testRunId === runId && IN_RUN.has(e.state));
    if (run) members.sort((a, b) => run.prNumbers.indexOf(a.prNumber) - run.prNumbers.indexOf(b.prNumber));
    return members;
  }

  /** Units in queue order (the order their runs started in). */
  private units(): Unit[] {
    const byRun = new Map<string, Entry[]>();
    for (const e of this.entries) {
      if (!e.testRunId || !IN_RUN.has(e.state)) continue;
      const list = byRun.get(e.testRunId);
      if (list) list.push(e);
      else byRun.set(e.testRunId, [e]);
    }
    const units: Unit[] = [];
    for (const run of this.runs) {
      const members = byRun.get(run.id);
      if (!members) continue;
      members.sort((a, b) => run.prNumbers.indexOf(a.prNumber) - run.prNumbers.indexOf(b.prNumber));
      units.push({ run, members, targets: unionTargets(members.map((m) => m.impactedTargets)) });
    }
    return units.sort((a, b) => a.run.seq - b.run.seq);
  }

  private restartUnit(unit: Unit, reason: QueuedReason): void {
    let run = this.run(unit.run.id) as TestRun;
    if (run.status === 'in_progress') {
      this.effects.push({ type: 'cancelTestRun', runId: run.id });
      run = this.updateRun(run, { status: 'cancelled', finishedAt: this.ctx.now });
    }
    this.updateRun(run, { restartedAt: this.ctx.now });
    for (const m of unit.members) this.setState(this.current(m), 'pending', reason);
  }

  /** Re-evaluates readiness, validity, failures, merges and new runs until nothing changes. */
  settle(): void {
    for (let round = 0; round < 64; round++) {
      const before = this.effects.length;
      this.readiness();
      this.cancelOrphanRuns();
      this.releaseBisections();
      this.preempt();
      this.invalidate();
      this.resolveFailures();
      this.requestMerge();
      this.startRuns();
      if (this.effects.length === before) break;
    }
    if (this.config.pendingMode !== null && !hasAdmittedWork(this.model)) {
      const state = this.config.state === 'switching_modes' ? 'running' : this.config.state;
      this.config = { ...this.config, state, mode: this.config.pendingMode, pendingMode: null };
    }
  }

  private readiness(): void {
    // One snapshot for the loop: readiness reads only the branch and the config, which setState leaves alone.
    const model = this.model;
    const admits = admitsNewWork(model);
    for (const entry of [...this.entries]) {
      if (isTerminal(entry.state)) continue;
      const ready = isReady(model, entry);
      if (entry.state === 'not_ready' && ready && admits) {
        this.setState(entry, 'pending', entry.reason === 'API_REQUESTED' ? 'API_REQUESTED' : 'MERGE_ITEM_NOW_READY');
      } else if (entry.state === 'pending' && !ready) {
        this.setState(entry, 'not_ready', 'AWAITING_READINESS');
      }
    }
  }

  /** A run nobody is in any more (all its PRs cancelled) stops. */
  private cancelOrphanRuns(): void {
    const inRun = new Set<string>();
    for (const e of this.entries) if (e.testRunId && IN_RUN.has(e.state)) inRun.add(e.testRunId);
    for (const run of [...this.runs]) {
      if (run.status === 'in_progress' && !inRun.has(run.id)) {
        this.effects.push({ type: 'cancelTestRun', runId: run.id });
        this.updateRun(run, { status: 'cancelled', finishedAt: this.ctx.now });
      }
    }
  }

  /**
   * A unit's test commit is only worth something while what it was built on still holds: a PR of
   * its own that left it, or a PR of its base that failed, left, or went back to pending, sends the
   * unit back to pending. A main-line unit needs its base to land before it (merged, or in a unit
   * of the line ahead); a bisection group only diagnoses, so its base PRs need only stay candidates.
   */
  private invalidate(): void {
    const units = this.units();
    const unitOf = new Map<number, Unit>();
    for (const unit of units) for (const m of unit.members) unitOf.set(m.prNumber, unit);
    for (const unit of units) {
      if (unit.run.mergeRequested) continue;
      const holds = (pr: number, own: boolean): QueuedReason | null => {
        const e = this.find(pr);
        if (!e || e.state === 'merged') return null;
        const at = unitOf.get(pr);
        if (own ? at === unit : unit.run.isBisection ? isCandidate(e) : at !== undefined && inLine(at) && at.run.seq < unit.run.seq) return null;
        return restartReason(e);
      };
      let reason: QueuedReason | null = null;
      for (const pr of unit.run.basePrNumbers) reason ??= holds(pr, false);
      for (const pr of unit.run.prNumbers) reason ??= holds(pr, true);
      if (reason) {
        for (const m of unit.members) unitOf.delete(m.prNumber);
        this.restartUnit(unit, reason);
      }
    }
  }

  /** An urgent PR interrupts the non-urgent tests it would have to wait behind. */
  private preempt(): void {
    if (this.config.state === 'paused') return;
    const urgent = this.entries.filter((e) => e.state === 'pending' && e.priority.value === 0);
    if (!urgent.length) return;
    const parallel = this.config.mode === 'parallel';
    for (const unit of this.units()) {
      if (unit.run.isBisection || unit.run.mergeRequested || unit.run.status === 'succeeded') continue; // bisection is off the line
      if (unit.members.some((m) => m.priority.value === 0)) continue;
      if (parallel && !urgent.some((u) => targetsOverlap(u.impactedTargets, unit.targets))) continue;
      this.restartUnit(unit, 'SKIP_THE_LINE_INTERRUPTED');
    }
  }

  /** PRs of the units ahead of `unit` that its test commit contains and that have not merged. */
  private unmergedBase(run: TestRun): number[] {
    return run.basePrNumbers.filter((pr) => this.find(pr)?.state !== 'merged');
  }

  /** Units of the line built on `unit` (its successors), in queue order. */
  private successors(unit: Unit, line: Unit[]): Unit[] {
    const own = new Set(unit.run.prNumbers);
    return line.filter((u) => u.run.seq > unit.run.seq && u.run.basePrNumbers.some((pr) => own.has(pr)));
  }

  /**
   * A failed unit of the line waits for the units ahead to land and for `pendingFailureDepth`
   * successors to finish; then it is cleared by an optimistic merge, bisected, or fails. A failed
   * bisection group waits until each PR it was built on has landed or passed its own bisection.
   */
  private resolveFailures(): void {
    const units = this.units();
    const line = units.filter(inLine);
    for (const unit of units) {
      if (unit.run.status !== 'failed' || unit.run.mergeRequested) continue;
      if (unit.run.isBisection) {
        if (!unit.run.basePrNumbers.every((pr) => this.cleared(pr))) continue; // the culprit may be among them
      } else {
        if (this.unmergedBase(unit.run).length > 0) continue; // the culprit may be ahead
        const watched = this.successors(unit, line).slice(0, this.config.pendingFailureDepth);
        if (watched.some((u) => u.run.status === 'in_progress')) continue;
        if (this.config.canOptimisticallyMerge && watched.some((u) => u.run.status === 'succeeded')) continue; // a merge clears it
      }
      const reason = unit.run.failureReason ?? 'TEST_RUN_REQUIRED_STATUS_FAILED';
      if (unit.members.length > 1 && reason !== 'TEST_RUN_TIMEOUT') this.bisect(unit);
      else for (const m of unit.members) this.setState(this.current(m), 'failed', reason);
    }
  }

  /** Whether a PR of a failed combination is known not to be its culprit: it landed, or its bisection group passed. */
  private cleared(prNumber: number): boolean {
    const e = this.find(prNumber);
    return e?.state === 'merged' || (isCandidate(e) && !e.bisectGroup);
  }

  /**
   * Splits a failed unit in halves that leave the line: they are tested on `bisectionConcurrency`
   * slots while the line goes on without them (the units built on them restart).
   */
  private bisect(unit: Unit): void {
    const base = this.unmergedBase(unit.run);
    const half = Math.ceil(unit.members.length / 2);
    for (const group of [unit.members.slice(0, half), unit.members.slice(half)]) {
      const id = this.ctx.newId();
      for (const m of group) {
        this.setState(this.current(m), 'pending', 'BISECTION_REQUIRED', {
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
  private bisectionBase(members: Entry[]): number[] {
    const known = members[0].bisectKnownFailure;
    if (!known) return [];
    const first = Math.min(...members.map((m) => known.prs.indexOf(m.prNumber)));
    return [...known.base, ...known.prs.slice(0, first)].filter((pr) => isCandidate(this.find(pr)));
  }

  /**
   * A bisection group that passed lands at once when its commit is still exactly what the target
   * would become (built on the bare target, nothing landed since it started) and nothing of the
   * line in its lane is in flight, which would have to restart. Otherwise its PRs go back to the
   * main line, in their queue order, to be tested there (`BISECTION_TEST_RUN_PASSED`).
   */
  private releaseBisections(): void {
    const units = this.units();
    const line = units.filter(inLine);
    for (const unit of units) {
      if (!unit.run.isBisection || unit.run.status !== 'succeeded' || unit.run.mergeRequested) continue;
      if (this.landsDirectly(unit, line)) continue; // requestMerge lands it
      for (const m of unit.members) {
        this.setState(this.current(m), 'pending', 'BISECTION_TEST_RUN_PASSED', { bisectGroup: null, bisectKnownFailure: null });
      }
    }
  }

  private landsDirectly(unit: Unit, line: Unit[]): boolean {
    if (unit.run.basePrNumbers.length > 0 || unit.run.landedSince) return false;
    const parallel = this.config.mode === 'parallel';
    return !line.some((u) => !parallel || targetsOverlap(u.targets, unit.targets));
  }

  /** Lands the first passing unit whose base has landed (or, optimistically, is still in flight). */
  private requestMerge(): void {
    if (this.config.state === 'paused') return;
    if (this.runs.some((r) => r.mergeRequested && this.membersOf(r.id).length > 0)) return; // one merge at a time
    const units = this.units();
    const position = new Map<number, number>();
    for (const unit of units) for (const m of unit.members) position.set(m.prNumber, unit.run.seq);
    for (const unit of units) {
      if (unit.run.status !== 'succeeded') continue;
      const base = this.unmergedBase(unit.run);
      if (base.length > 0 && !this.config.canOptimisticallyMerge) continue;
      // Optimistically landing PRs ahead needs each of them to still be in a unit ahead.
      if (base.some((pr) => (position.get(pr) ?? Infinity) >= unit.run.seq)) continue;
      const run = this.run(unit.run.id) as TestRun;
      const prNumbers = [...base, ...unit.members.map((m) => m.prNumber)];
      this.updateRun(run, { mergeRequested: true, mergePrNumbers: prNumbers });
      this.effects.push({ type: 'merge', runId: run.id, prNumbers });
      return;
    }
  }

  /** Starts test runs for pending PRs in queue order while slots are free: bisection groups, then the line. */
  private startRuns(): void {
    if (this.config.state === 'paused') return;
    const pending = this.entries.filter((e) => e.state === 'pending').sort(compareEntries);
    if (!pending.length) return;
    const slots = new Slots(this.entries, this.runs, this.config);
    this.startBisections(pending, slots);
    this.startLine(pending, slots);
  }

  /** Bisection groups: each is tested on the candidates of its failed combination ahead of it, never on the line. */
  private startBisections(pending: Entry[], slots: Slots): void {
    const groups = new Map<string, Entry[]>();
    for (const e of pending) {
      if (!e.bisectGroup) continue;
      const group = groups.get(e.bisectGroup);
      if (group) group.push(e);
      else groups.set(e.bisectGroup, [e]);
    }
    for (const members of groups.values()) {
      const base = this.bisectionBase(members);
      if (this.config.optimizationMode === 'bisection_skip_redundant_tests' && this.knownToFail(members, base)) {
        // This exact combination already failed: once the rest of it is cleared, the group is the culprit without a run.
        if (!base.every((pr) => this.cleared(pr))) continue;
        const run = this.createRun(members, base, true);
        this.updateRun(run, { status: 'failed', finishedAt: this.ctx.now, failureReason: 'TEST_RUN_FAILED_BY_OPTIMIZATION' });
        for (const m of members) this.setState(this.current(m), 'pending_failure', 'TEST_RUN_FAILED_BY_OPTIMIZATION', { testRunId: run.id });
        continue;
      }
      if (!slots.free(members[0], true)) continue;
      this.launch(members, base, true);
      slots.take(members[0], true);
    }
  }

  /** Whether testing `members` on `base` repeats the combination their bisection started from (its landed PRs included). */
  private knownToFail(members: Entry[], base: number[]): boolean {
    const known = members[0].bisectKnownFailure;
    if (!known) return false;
    const tested = new Set([...base, ...members.map((m) => m.prNumber)]);
    return [...known.base, ...known.prs].every((pr) => tested.has(pr) || this.find(pr)?.state === 'merged');
  }

  /** The main line: units of pending PRs (batches when batching), each on the target plus the line ahead of it. */
  private startLine(pending: Entry[], slots: Slots): void {
    const parallel = this.config.mode === 'parallel';
    const line = this.viableLine();
    const taken = new Set<string>();
    const blocked = new Blocked(parallel);
    const draining = this.config.state === 'draining' || this.config.state === 'switching_modes';
    const waitMs = this.config.batchingMaxWaitTimeMinutes * 60_000;

    for (const entry of pending) {
      if (entry.bisectGroup || taken.has(entry.id)) continue;
      let members: Entry[];
      if (this.config.batch && !entry.noBatch) {
        members = [entry];
        for (const e of pending) {
          if (members.length >= this.config.batchingMinSize) break;
          if (e === entry || taken.has(e.id) || e.noBatch || e.bisectGroup || e.seq < 0) continue;
          if (compareEntries(e, entry) < 0) continue;
          if (parallel && !targetsOverlap(e.impactedTargets, entry.impactedTargets)) continue;
          members.push(e);
        }
      } else {
        members = [entry];
      }
      for (const m of members) taken.add(m.id);
      const targets = unionTargets(members.map((m) => m.impactedTargets));
      const isBlocked = () => blocked.add(targets);
      if (blocked.holds(targets)) {
        isBlocked();
        continue;
      }
      // A batch waits to fill up, unless the queue is draining or its oldest PR waited long enough.
      if (this.config.batch && !entry.noBatch && members.length < this.config.batchingMinSize && !draining) {
        const oldest = Math.min(...members.map((m) => (m.restarts ? -Infinity : (m.admittedAt ?? this.ctx.now))));
        if (this.ctx.now - oldest < waitMs) {
          isBlocked();
          continue;
        }
      }
      if (!slots.free(entry, false)) {
        isBlocked();
        continue;
      }
      const deps = parallel ? this.dependencyClosure(line, targets) : line;
      // Do not stack new work on a failure beyond the successors pendingFailureDepth asks for (the hold's window).
      const holdsBack = deps.some((u) => u.run.status === 'failed' && this.successors(u, line).length >= this.config.pendingFailureDepth);
      if (holdsBack) {
        isBlocked();
        continue;
      }
      const run = this.launch(members, deps.flatMap((u) => u.members.map((m) => m.prNumber)), false);
      line.push({ run, members: members.map((m) => this.current(m)), targets });
      slots.take(entry, false);
    }
  }

  /**
   * The units of the line a new unit may be built on. Without optimistic merging and without a
   * hold (`pendingFailureDepth` 0), a failed unit can no longer land — it fails, is bisected, or
   * restarts once the units ahead are judged — and neither can the units built on it: new units
   * leave them out instead of waiting behind them.
   */
  private viableLine(): Unit[] {
    const line = this.units().filter(inLine);
    if (this.config.pendingFailureDepth > 0 || this.config.canOptimisticallyMerge) return line;
    const doomed = new Set<number>();
    for (const u of line) {
      if (u.run.status === 'failed' || u.run.basePrNumbers.some((pr) => doomed.has(pr))) for (const m of u.members) doomed.add(m.prNumber);
    }
    return line.filter((u) => !doomed.has(u.members[0].prNumber));
  }

  /** Creates a run for `members` on `basePrNumbers`, asks the shell to start it and moves the members to testing. */
  private launch(members: Entry[], basePrNumbers: number[], isBisection: boolean): TestRun {
    const run = this.createRun(members, basePrNumbers, isBisection);
    this.effects.push({ type: 'startTestRun', runId: run.id });
    for (const m of members) {
      // Keep why a retest happens (e.g. PREREQUISITE_MERGE_ITEM_FAILED) as the reason of the new test.
      const reason = m.reason && (QUEUED_REASONS as readonly string[]).includes(m.reason) ? m.reason : null;
      this.setState(this.current(m), 'testing', reason, { testRunId: run.id, testingStartedAt: this.ctx.now });
    }
    return run;
  }

  private createRun(members: Entry[], basePrNumbers: number[], isBisection: boolean): TestRun {
    const run: TestRun = {
      id: this.ctx.newId(),
      prNumbers: members.map((m) => m.prNumber),
      basePrNumbers,
      isBisection,
      status: 'in_progress',
      checks: {},
      startedAt: this.ctx.now,
      finishedAt: null,
      failureReason: null,
      branch: null,
      sha: null,
      seq: this.nextSeq++,
      mergeMethod: this.config.mergeMethod,
      requiredStatuses: this.config.requiredStatuses,
      mergeRequested: false,
      mergePrNumbers: null,
    };
    this.runs.push(run);
    return run;
  }

  /** Parallel mode: the units a new unit with `targets` depends on, directly or through others. */
  private dependencyClosure(units: Unit[], targets: ImpactedTargets | null): Unit[] {
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

  add(targets: ImpactedTargets | null): void {
    this.any = true;
    if (targets === null) this.unknown = this.all = this.nonEmpty = true;
    else if (targets === 'ALL') this.all = this.nonEmpty = true;
    else if (targets.length > 0) {
      this.nonEmpty = true;
      for (const t of targets) this.names.add(t);
    }
  }

  holds(targets: ImpactedTargets | null): boolean {
    if (!this.any) return false;
    if (!this.parallel || targets === null || this.unknown) return true;
    if (targets === 'ALL') return this.nonEmpty;
    return targets.length > 0 && (this.all || targets.some((t) => this.names.has(t)));
  }
}

/**
 * Test slots in use per lane. The queue is one lane in single mode. In parallel mode a lane is a
 * connected component of the impacted-target overlap graph among the admitted entries, and
 * `concurrency` and `bisectionConcurrency` apply to each lane on its own (README, "The merge queue").
 */
class Slots {
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
    return isBisection ? (used?.bisection ?? 0) < this.config.bisectionConcurrency : (used?.main ?? 0) < this.config.concurrency;
  }

  take(entry: Entry, isBisection: boolean): void {
    const lane = this.laneOf(entry);
    const used = this.used.get(lane) ?? { main: 0, bisection: 0 };
    if (isBisection) used.bisection++;
    else used.main++;
    this.used.set(lane, used);
  }
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
