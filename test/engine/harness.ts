import { resolvePriority } from '../../src/contract/index.js';
import { findEntry, newQueueModel, step } from '../../src/engine/index.js';
import type { ConfigPatch, Effect, EngineEvent, PrFacts, QueueModel, TestRun } from '../../src/engine/index.js';
import type { PriorityInput } from '../../src/contract/index.js';

export function facts(prNumber: number, branch = 'main'): PrFacts {
  return {
    headSha: prNumber.toString(16).padStart(40, '0'),
    headBranch: `feature/${prNumber}`,
    title: `PR ${prNumber}`,
    author: 'dev',
    baseBranch: branch,
    mergeability: 'mergeable',
    open: true,
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
  readonly merges: MergeRecord[] = [];
  readonly target: number[] = [];
  /** Runs the shell has been asked to start and not cancelled: runId → true. */
  readonly started = new Set<string>();
  readonly cancelled = new Set<string>();
  readonly targetAtStart = new Map<string, number[]>();
  maxInFlight = { main: 0, bisection: 0 };
  /** Apply merges as soon as they are asked for. */
  autoMerge = true;

  constructor(config: ConfigPatch = {}, mode: 'single' | 'parallel' = 'single') {
    this.model = newQueueModel('main', mode);
    if (Object.keys(config).length) this.apply({ type: 'updateConfig', patch: config });
  }

  apply(event: EngineEvent): Effect[] {
    const result = step(this.model, event, { now: this.now, newId: () => `id-${++this.ids}` });
    this.model = result.model;
    this.effects.push(...result.effects);
    for (const effect of result.effects) {
      if (effect.type === 'startTestRun') {
        this.started.add(effect.runId);
        this.targetAtStart.set(effect.runId, [...this.target]);
      }
      if (effect.type === 'cancelTestRun') this.cancelled.add(effect.runId);
    }
    let main = 0;
    let bisection = 0;
    for (const r of this.model.runs) {
      if (r.status !== 'in_progress') continue;
      if (r.isBisection) bisection++;
      else main++;
    }
    this.maxInFlight = { main: Math.max(this.maxInFlight.main, main), bisection: Math.max(this.maxInFlight.bisection, bisection) };
    if (this.autoMerge) for (const effect of result.effects) if (effect.type === 'merge') this.land(effect.runId, effect.prNumbers);
    return result.effects;
  }

  land(runId: string, prNumbers: number[]): void {
    const run = this.run(runId);
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

  submit(prNumber: number, options: { priority?: PriorityInput; noBatch?: boolean; targets?: string[] | 'ALL' } = {}): void {
    const pr = facts(prNumber);
    if (options.targets !== undefined) {
      // Impacted targets are uploaded first (as the merge action does), then the PR is submitted.
      this.apply({ type: 'submit', prNumber, pr, priority: options.priority === undefined ? undefined : resolvePriority(options.priority), noBatch: options.noBatch });
      this.apply({ type: 'impactedTargets', prNumber, sha: pr.headSha, targets: options.targets });
    } else {
      this.apply({ type: 'submit', prNumber, pr, priority: options.priority === undefined ? undefined : resolvePriority(options.priority), noBatch: options.noBatch });
    }
  }

  run(runId: string): TestRun {
    const run = this.model.runs.find((r) => r.id === runId);
    if (!run) throw new Error(`no run ${runId}`);
    return run;
  }

  inProgress(): TestRun[] {
    return this.model.runs.filter((r) => r.status === 'in_progress');
  }

  finish(runId: string, passed: boolean): void {
    this.apply({ type: 'testRunFinished', runId, passed });
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
      for (const run of running) if (this.run(run.id).status === 'in_progress') this.finish(run.id, outcome(this.run(run.id)));
    }
    throw new Error('the queue never settled');
  }

  /** Entries still in the queue. */
  waiting(): boolean {
    return this.model.entries.some((e) => !['merged', 'failed', 'cancelled'].includes(e.state) && e.state !== 'not_ready');
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
export const oracle = (broken: ReadonlySet<number>) => (run: TestRun) => ![...run.basePrNumbers, ...run.prNumbers].some((pr) => broken.has(pr));
