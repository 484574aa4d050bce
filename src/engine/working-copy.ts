/**
 * The working copy of one step: a queue model being changed, the effects asked of the shell so
 * far, and indexes that make the rules' lookups cheap. Every change to an entry or a run goes
 * through here, so that the model handed in is never mutated (entries and runs are replaced,
 * not edited) and every state change is reported as a `stateChanged` effect.
 */
import {
  QUEUED_REASONS,
  type ImpactedTargets,
  type PullRequestState,
  type QueuedReason,
} from '../contract/index.js';
import { findEntry, IN_RUN, isTerminal, unionTargets } from './model.js';
import { basisOf } from './rules/basis.js';
import { lanes } from './rules/lanes.js';
import {
  EngineRejection,
  type Effect,
  type Entry,
  type QueueConfig,
  type QueueModel,
  type ReasonCode,
  type StepContext,
  type StepResult,
  type TestRun,
} from './types.js';

/** A test unit being tested or waiting on its result: a run and the entries in it, in queue order. */
export interface Unit {
  run: TestRun;
  members: Entry[];
  targets: ImpactedTargets | null;
}

/**
 * Whether a unit is in the main line, whose units are tested on the target plus the line ahead of
 * them and land in order: every main unit, and a bisection group once it is landing. Other
 * bisection groups are tested off the line: nothing in the line is built on them.
 */
export const inLine = (unit: Unit): boolean => !unit.run.isBisection || unit.run.mergeRequested;

/** Units of the line built on `unit` (its successors), in queue order. */
export function successors(unit: Unit, line: Unit[]): Unit[] {
  const own = new Set(unit.run.prNumbers);
  return line.filter((u) => u.run.seq > unit.run.seq && u.run.basePrNumbers.some((pr) => own.has(pr)));
}

/** Mutable working copy of a model for one step; entries and runs are copied on first write. */
export class WorkingCopy {
  readonly entries: Entry[];
  readonly runs: TestRun[];
  config: QueueConfig;
  nextSeq: number;
  readonly effects: Effect[] = [];

  // Lookups by entry id and by PR number (performance only: entries are replaced in place, never moved).
  private readonly byId = new Map<string, number>();
  private readonly byPr = new Map<number, number[]>();
  /** Counts the changes to entries and runs (every one goes through add, update, updateRun, createRun). */
  private version = 0;
  /** What `units()` answered at `version` (performance only: the rules ask it several times a round). */
  private unitsAt: { version: number; units: Unit[] } | null = null;
  /** What `laneOf()` answered at `version` (startRuns asks it every round; the last round changes nothing). */
  private lanesAt: { version: number; laneOf: (entry: Entry) => number | string } | null = null;

  constructor(
    readonly original: QueueModel,
    readonly ctx: StepContext,
  ) {
    this.entries = [...original.entries];
    this.runs = [...original.runs];
    this.config = original.config;
    this.nextSeq = original.nextSeq;
    for (let i = 0; i < this.entries.length; i++) this.index(this.entries[i], i);
  }

  private index(entry: Entry, at: number): void {
    if (!this.byId.has(entry.id)) this.byId.set(entry.id, at);
    const list = this.byPr.get(entry.prNumber);
    if (list) list.push(at);
    else this.byPr.set(entry.prNumber, [at]);
  }

  result(): StepResult {
    return { model: this.model, effects: this.effects };
  }

  /** The model as it stands now (a new object each time; the arrays are the working copy's). */
  get model(): QueueModel {
    return {
      ...this.original,
      config: this.config,
      entries: this.entries,
      runs: this.runs,
      nextSeq: this.nextSeq,
    };
  }

  // ------------------------------------------------------------------ reading

  /** The current entry of a PR (non-terminal first, else the latest) without building a model. */
  find(prNumber: number): Entry | undefined {
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

  /** The entry of a command: the PR's active entry, or a rejection that says why there is none. */
  active(prNumber: number): Entry {
    const entry = findEntry(this.model, prNumber);
    if (!entry)
      throw new EngineRejection(
        'not_found',
        `pull request #${prNumber} was never submitted to the ${this.original.branch} queue`,
      );
    if (isTerminal(entry.state))
      throw new EngineRejection(
        'invalid',
        `pull request #${prNumber} is not in the queue: it is ${entry.state}`,
      );
    return entry;
  }

  /** The latest version of `entry` (rules hold on to entries that an earlier change replaced). */
  current(entry: Entry): Entry {
    const at = this.byId.get(entry.id);
    return (at === undefined ? undefined : this.entries[at]) as Entry;
  }

  run(runId: string): TestRun | undefined {
    return this.runs.find((r) => r.id === runId);
  }

  /** A run by id, searched from the newest (the runs a new run is built on are recent). */
  lastRun(runId: string): TestRun | undefined {
    for (let i = this.runs.length - 1; i >= 0; i--) if (this.runs[i].id === runId) return this.runs[i];
    return undefined;
  }

  membersOf(runId: string): Entry[] {
    const run = this.run(runId);
    const members = this.entries.filter((e) => e.testRunId === runId && IN_RUN.has(e.state));
    if (run) members.sort((a, b) => run.prNumbers.indexOf(a.prNumber) - run.prNumbers.indexOf(b.prNumber));
    return members;
  }

  /**
   * Units in queue order (the order their runs started in). A new array each time (callers may
   * change it), of the same Unit objects while no entry or run changed: callers must not change those.
   */
  units(): Unit[] {
    if (this.unitsAt?.version !== this.version) this.unitsAt = { version: this.version, units: this.buildUnits() };
    return this.unitsAt.units.slice();
  }

  /** Parallel mode: the lane of each admitted entry as it stands (rules/lanes.ts), kept while nothing changed. */
  laneOf(): (entry: Entry) => number | string {
    if (this.lanesAt?.version !== this.version) this.lanesAt = { version: this.version, laneOf: lanes(this.entries) };
    return this.lanesAt.laneOf;
  }

  private buildUnits(): Unit[] {
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

  /** PRs of the units ahead of `unit` that its test commit contains and that have not merged. */
  unmergedBase(run: TestRun): number[] {
    return run.basePrNumbers.filter((pr) => this.find(pr)?.state !== 'merged');
  }

  // ------------------------------------------------------------------ changing

  /** Adds a new entry (a submission) in `not_ready`. */
  add(entry: Entry): void {
    this.version++;
    this.entries.push(entry);
    this.index(entry, this.entries.length - 1);
    this.effects.push({
      type: 'stateChanged',
      entryId: entry.id,
      prNumber: entry.prNumber,
      from: null,
      to: 'not_ready',
      reason: 'API_REQUESTED',
    });
  }

  update(entry: Entry, patch: Partial<Entry>): Entry {
    this.version++;
    const at = this.byId.get(entry.id);
    const index = at !== undefined && this.entries[at] === entry ? at : this.entries.indexOf(entry);
    const next = { ...entry, ...patch };
    this.entries[index] = next;
    return next;
  }

  updateRun(run: TestRun, patch: Partial<TestRun>): TestRun {
    this.version++;
    const index = this.runs.indexOf(run);
    const next = { ...run, ...patch };
    this.runs[index] = next;
    return next;
  }

  /** Moves an entry to a state, keeps its timestamps and restart count, and reports the change. */
  setState(entry: Entry, to: PullRequestState, reason: ReasonCode | null, extra: Partial<Entry> = {}): Entry {
    const now = this.ctx.now;
    const patch: Partial<Entry> = { state: to, reason, stateChangedAt: now, ...extra };
    if (to === 'pending' && entry.admittedAt === null) patch.admittedAt = now;
    if (to === 'pending' && IN_RUN.has(entry.state)) {
      patch.restarts = (entry.restarts ?? 0) + 1;
      patch.testingStartedAt = null;
    }
    if (isTerminal(to)) patch.concludedAt = now;
    this.effects.push({
      type: 'stateChanged',
      entryId: entry.id,
      prNumber: entry.prNumber,
      from: entry.state,
      to,
      reason,
    });
    return this.update(entry, patch);
  }

  /** Stops a unit's run if it is still going, and sends its PRs back to pending. */
  restartUnit(unit: Unit, reason: QueuedReason): void {
    let run = this.run(unit.run.id) as TestRun;
    if (run.status === 'in_progress') {
      this.effects.push({ type: 'cancelTestRun', runId: run.id });
      run = this.updateRun(run, { status: 'cancelled', finishedAt: this.ctx.now });
    }
    this.updateRun(run, { restartedAt: this.ctx.now });
    for (const m of unit.members) this.setState(this.current(m), 'pending', reason);
  }

  /** Records a new run of `members` on `basePrNumbers` (in progress; nobody asked the shell yet). */
  createRun(members: Entry[], basePrNumbers: number[], isBisection: boolean): TestRun {
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
    this.version++;
    this.runs.push(run);
    return run;
  }

  /** Asks the shell to start `run`, on the basis the rule names (rules/basis.ts). */
  startRun(run: TestRun): void {
    const basis = basisOf(run, { entry: (pr) => this.find(pr), run: (id) => this.lastRun(id) });
    this.effects.push({ type: 'startTestRun', runId: run.id, basis });
  }

  /** Creates a run for `members` on `basePrNumbers`, asks the shell to start it and moves the members to testing. */
  launch(members: Entry[], basePrNumbers: number[], isBisection: boolean): TestRun {
    const run = this.createRun(members, basePrNumbers, isBisection);
    this.startRun(run);
    for (const m of members) {
      // Keep why a retest happens (e.g. PREREQUISITE_MERGE_ITEM_FAILED) as the reason of the new test.
      const reason = m.reason && (QUEUED_REASONS as readonly string[]).includes(m.reason) ? m.reason : null;
      this.setState(this.current(m), 'testing', reason, {
        testRunId: run.id,
        testingStartedAt: this.ctx.now,
      });
    }
    return run;
  }
}
