import { resolvePriority } from '../../src/contract/index.js';
import { isDeepStrictEqual } from 'node:util';
import { findEntry, newQueueModel, step, targetsOverlap } from '../../src/engine/index.js';
import { stepWhole } from '../../src/engine/step.js';
import { Stacks } from '../../src/engine/rules/stacks.js';
import type {
  ConfigPatch,
  Effect,
  Entry,
  EngineEvent,
  FailedTest,
  PrFacts,
  QueueModel,
  StepResult,
  TestRun,
} from '../../src/engine/index.js';
import type { PriorityInput } from '../../src/contract/index.js';

export function facts(prNumber: number, branch = 'main', stackedOn?: number): PrFacts {
  return {
    headSha: prNumber.toString(16).padStart(40, '0'),
    headBranch: `feature/${prNumber}`,
    title: `PR ${prNumber}`,
    author: 'dev',
    baseBranch: stackedOn === undefined ? branch : `feature/${stackedOn}`,
    mergeability: 'mergeable',
    open: true,
    ...(stackedOn === undefined ? {} : { stackedOn }),
  };
}

export interface MergeRecord {
  runId: string;
  prNumbers: number[];
  /** Everything the run's test commit contained. */
  tested: number[];
  /** The run had passed when the merge was asked for. */
  runPassed: boolean;
  /** What the target held after the merge. */
  targetAfter: number[];
  /** What the target held when the run started (the commit it was built on). */
  targetAtStart: number[];
}

/**
 * Drives the pure engine the way the server does: applies events, keeps the effects, and lets a
 * test decide when runs finish. The target branch is modelled as the list of PRs merged into it.
 */
export class Harness {
  model: QueueModel;
  now = Date.parse('2026-01-05T09:00:00Z');
  private ids = 0;
  readonly effects: Effect[] = [];
  /** Every effect with the time it was asked for. */
  readonly log: { at: number; effect: Effect }[] = [];
  readonly merges: MergeRecord[] = [];
  readonly target: number[] = [];
  /** Runs the shell has been asked to start and not cancelled: runId → true. */
  readonly started = new Set<string>();
  readonly cancelled = new Set<string>();
  readonly targetAtStart = new Map<string, number[]>();
  /**
   * What each started run's test commit holds when built the way the engine's basis says: the
   * target plus the unmerged base, or the commit of the named run; either way plus its own PRs.
   */
  readonly built = new Map<string, number[]>();
  /** The unmerged part of each started run's base, when it started. */
  readonly baseAtStart = new Map<string, number[]>();
  /**
   * The most runs of one kind (main, bisection) in progress in one lane right after a run of that
   * kind started in it. In single mode the queue is one lane, so this is the most runs at once.
   */
  maxInFlight = { main: 0, bisection: 0 };
  /** Apply merges as soon as they are asked for. */
  autoMerge = true;
  /** The stacks (bottom first) of every merge that landed a stack. */
  readonly stacksLanded: number[][] = [];
  /** Merges that landed part of a stack, or a stack out of order: always empty. */
  readonly partlyLanded: { stack: number[]; landed: number[] }[] = [];

  constructor(config: ConfigPatch = {}, mode: 'single' | 'parallel' = 'single') {
    this.model = newQueueModel('main', mode);
    if (Object.keys(config).length) this.apply({ type: 'updateConfig', patch: config });
  }

  /**
   * Check every step against the rules run on the whole model (src/engine/working-set.ts: the
   * working set must hold everything the rules read); a difference throws, with the event.
   */
  checkWorkingSet = false;

  apply(event: EngineEvent): Effect[] {
    const ids: string[] = [];
    const newId = () => {
      const id = `id-${++this.ids}`;
      ids.push(id);
      return id;
    };
    let result;
    try {
      result = step(this.model, event, { now: this.now, newId });
    } catch (error) {
      if (this.checkWorkingSet) this.compareWhole(event, ids, error, undefined);
      throw error;
    }
    if (this.checkWorkingSet) this.compareWhole(event, ids, undefined, result);
    this.model = result.model;
    this.effects.push(...result.effects);
    for (const effect of result.effects) this.log.push({ at: this.now, effect });
    for (const effect of result.effects) {
      if (effect.type === 'startTestRun') {
        this.started.add(effect.runId);
        this.targetAtStart.set(effect.runId, [...this.target]);
        const run = this.run(effect.runId);
        const base = run.basePrNumbers.filter((pr) => findEntry(this.model, pr)?.state !== 'merged');
        this.baseAtStart.set(run.id, base);
        const below =
          effect.basis.on === 'run' ? this.built.get(effect.basis.runId) : [...this.target, ...base];
        if (!below)
          throw new Error(
            `run ${run.id} is built on run ${effect.basis.on === 'run' ? effect.basis.runId : ''}, which never started`,
          );
        this.built.set(run.id, [...below, ...run.prNumbers]);
      }
      if (effect.type === 'cancelTestRun') this.cancelled.add(effect.runId);
    }
    const started = result.effects.flatMap((e) => (e.type === 'startTestRun' ? [e.runId] : []));
    if (started.length) this.countSlots(started);
    if (this.autoMerge)
      for (const effect of result.effects)
        if (effect.type === 'merge') this.land(effect.runId, effect.prNumbers);
    return result.effects;
  }

  private compareWhole(
    event: EngineEvent,
    ids: string[],
    error: unknown,
    result: StepResult | undefined,
  ): void {
    let k = 0;
    let wholeError: unknown;
    let whole: StepResult | undefined;
    try {
      whole = stepWhole(this.model, event, {
        now: this.now,
        newId: () => ids[k++] ?? 'an id the working set did not ask for',
      });
    } catch (e) {
      wholeError = e;
    }
    if (String(error) !== String(wholeError) || !isDeepStrictEqual(result, whole))
      throw new Error(
        `the step on the working set differs from the step on the whole model, for ${JSON.stringify(event)}`,
      );
  }

  private countSlots(started: string[]): void {
    const laneOf = lanes(this.model);
    const live = this.model.runs.filter((r) => r.status === 'in_progress');
    for (const run of live) {
      if (!started.includes(run.id)) continue;
      const n = live.filter((r) => r.isBisection === run.isBisection && laneOf(r) === laneOf(run)).length;
      const kind = run.isBisection ? 'bisection' : 'main';
      this.maxInFlight[kind] = Math.max(this.maxInFlight[kind], n);
    }
  }

  land(runId: string, prNumbers: number[]): void {
    const run = this.run(runId);
    // A stack lands whole: every PR of the stack of a landing PR lands with it, bottom first.
    const stacks = new Stacks(this.model.entries);
    for (const pr of prNumbers) {
      const entry = findEntry(this.model, pr) as Entry;
      const stack = stacks.members(entry).map((e) => e.prNumber);
      if (stack.length < 2) continue;
      this.stacksLanded.push(stack);
      if (stack.some((s) => !prNumbers.includes(s))) this.partlyLanded.push({ stack, landed: prNumbers });
      const at = stack.map((s) => prNumbers.indexOf(s));
      if (at.some((p, i) => i > 0 && p < at[i - 1])) this.partlyLanded.push({ stack, landed: prNumbers });
    }
    this.target.push(...prNumbers);
    this.merges.push({
      runId,
      prNumbers,
      tested: [...run.basePrNumbers, ...run.prNumbers],
      runPassed: run.status === 'succeeded',
      targetAfter: [...this.target],
      targetAtStart: this.targetAtStart.get(runId) ?? [],
    });
    this.apply({ type: 'mergeSucceeded', runId });
  }

  submit(
    prNumber: number,
    options: {
      priority?: PriorityInput;
      noBatch?: boolean;
      targets?: string[] | 'ALL';
      riskEstimate?: number;
      stackedOn?: number;
      facts?: PrFacts;
    } = {},
  ): void {
    const pr = options.facts ?? facts(prNumber, 'main', options.stackedOn);
    const priority = options.priority === undefined ? undefined : resolvePriority(options.priority);
    const risk = options.riskEstimate === undefined ? {} : { riskEstimate: options.riskEstimate };
    this.apply({ type: 'submit', prNumber, pr, priority, noBatch: options.noBatch, ...risk });
    // Impacted targets are uploaded for the head SHA (as the merge action does).
    if (options.targets !== undefined)
      this.apply({ type: 'impactedTargets', prNumber, sha: pr.headSha, targets: options.targets });
  }

  run(runId: string): TestRun {
    const run = this.model.runs.find((r) => r.id === runId);
    if (!run) throw new Error(`no run ${runId}`);
    return run;
  }

  inProgress(): TestRun[] {
    return this.model.runs.filter((r) => r.status === 'in_progress');
  }

  /** Ends a run; a failure may name its failing tests (flake-aware verdicts). */
  finish(runId: string, passed: boolean, failures?: FailedTest[]): void {
    this.apply({ type: 'testRunFinished', runId, passed, ...(failures ? { failures } : {}) });
  }

  /** Finishes every run in flight with `outcome(run)`, until nothing runs; time moves by `stepMs` each round. */
  settle(outcome: (run: TestRun) => boolean, stepMs = 60_000, maxRounds = 10_000): void {
    for (let i = 0; i < maxRounds; i++) {
      const running = this.inProgress();
      this.now += stepMs;
      if (running.length === 0) {
        this.apply({ type: 'tick' });
        if (this.inProgress().length === 0 && !this.waiting()) return;
        continue;
      }
      for (const run of running)
        if (this.run(run.id).status === 'in_progress') this.finish(run.id, outcome(this.run(run.id)));
    }
    throw new Error('the queue never settled');
  }

  /** Entries still in the queue. */
  waiting(): boolean {
    return this.model.entries.some(
      (e) => !['merged', 'failed', 'cancelled'].includes(e.state) && e.state !== 'not_ready',
    );
  }

  state(prNumber: number): string | undefined {
    return findEntry(this.model, prNumber)?.state;
  }

  reason(prNumber: number): string | null | undefined {
    return findEntry(this.model, prNumber)?.reason;
  }

  /** The run that tests `prNumber` now (or last). */
  runOf(prNumber: number): TestRun {
    const entry = findEntry(this.model, prNumber);
    if (!entry?.testRunId) throw new Error(`#${prNumber} has no run`);
    return this.run(entry.testRunId);
  }
}

/** A run passes when none of the PRs its commit contains is broken. */
export const oracle = (broken: ReadonlySet<number>) => (run: TestRun) =>
  ![...run.basePrNumbers, ...run.prNumbers].some((pr) => broken.has(pr));

const IN_RUN = ['testing', 'tests_passed', 'pending_failure'];

/**
 * The lane of each run in progress: in parallel mode the connected component, among admitted
 * entries, of "targets overlap or tested in one run"; in single mode the whole queue.
 */
function lanes(model: QueueModel): (run: TestRun) => number {
  if (model.config.mode !== 'parallel') return () => 0;
  const admitted = model.entries.filter(
    (e) => !['not_ready', 'merged', 'failed', 'cancelled'].includes(e.state),
  );
  const inRun = (e: Entry) => e.testRunId !== null && IN_RUN.includes(e.state);
  const linked = (a: Entry, b: Entry) =>
    targetsOverlap(a.impactedTargets, b.impactedTargets) ||
    (inRun(a) && inRun(b) && a.testRunId === b.testRunId);
  const lane = new Map<Entry, number>();
  admitted.forEach((seed, id) => {
    if (lane.has(seed)) return;
    const todo = [seed];
    lane.set(seed, id);
    while (todo.length) {
      const e = todo.pop() as Entry;
      for (const o of admitted) {
        if (lane.has(o) || !linked(e, o)) continue;
        lane.set(o, id);
        todo.push(o);
      }
    }
  });
  return (run) => lane.get(admitted.find((e) => inRun(e) && e.testRunId === run.id) as Entry) as number;
}
