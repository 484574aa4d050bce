/**
 * `railyard sim`: a discrete-event simulation in virtual time over the real engine
 * (src/engine/step.ts). The simulator plays the shell's part — it submits PRs, decides how test
 * runs end, lands merges and sends ticks when the engine has a deadline — and keeps its own
 * statistics. It never decides anything the engine decides.
 *
 * Outcomes: PR n is really broken with probability p (drawn when it is created). A run passes iff
 * none of the PRs its test commit contains is broken and it does not flake (probability f per
 * run). What the commit contains follows the basis the engine names in `startTestRun`: the commit
 * of the run it is built on plus the run's own PRs, or the target plus basePrNumbers ∪ prNumbers. Runs take T minutes, or T·(1 ± jitter) uniformly with
 * `ciJitter` > 0. Merges land instantly (same virtual time, after the step that asked for them).
 *
 * The flaky-aware queue (options of FlakySimOptions; every one absent = off, and the JSON keeps
 * the shape it had before them): a failed run reports its failing tests — one per broken PR it
 * contains, one for a flake. A flake's test is known (quarantined, with flake history) with
 * probability `quarantineCoverage`; a broken PR's test is known with `breakageInKnownTests`
 * (drawn once per PR: such a breakage landing through an ignored run is a quarantine escape).
 * With `riskShare`, a share S of PRs is broken with `riskFailureRate` and the rest with the rate
 * that keeps the mean at `failureRate`; each PR's riskEstimate is its class's rate, the right
 * class with probability `riskAccuracy`. These draws come from streams of their own, so the
 * other figures of a seed do not move when they are on.
 */
import type { Effect, EngineEvent, FailedTest, QueueModel, TestRun } from '../engine/index.js';
import { isTerminal, newQueueModel, nextDeadline, step } from '../engine/index.js';
import { analyticBounds } from './bounds.js';
import { EventHeap } from './heap.js';
import {
  DEFAULT_OPTIONS,
  flakyFeaturesOn,
  riskClassRates,
  validate,
  validateFlaky,
  validateStacks,
  type FlakySimFigures,
  type FlakySimOptions,
  type StackSimOptions,
  type SimOptions,
  type SimResult,
} from './options.js';
import { pruneModel } from './prune.js';
import { exponential, rng } from './random.js';
import { SimStacks } from './stacks.js';

export {
  DEFAULT_OPTIONS,
  flakyFeaturesOn,
  type FlakySimFigures,
  type FlakySimOptions,
  type SimOptions,
  type SimResult,
} from './options.js';
export { parseStackDepth, type StackSimOptions } from './options.js';
export { pruneModel } from './prune.js';

type SimEvent =
  | { time: number; seq: number; kind: 'arrival' }
  | { time: number; seq: number; kind: 'finish'; runId: string; passed: boolean; failures?: FailedTest[] }
  | { time: number; seq: number; kind: 'merge'; runId: string }
  | { time: number; seq: number; kind: 'tick' };

type Unscheduled = SimEvent extends infer E ? (E extends SimEvent ? Omit<E, 'seq'> : never) : never;

interface PrInfo {
  broken: boolean;
  lane: number;
  submittedAt: number;
  /** Flaky-aware sim: its breakage shows only in a known test. */
  breakageKnown?: boolean;
  /** The stack it arrived in (SimStacks), if any. */
  stack?: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Prune the model after this many steps: terminal entries and finished runs pile up otherwise. */
const PRUNE_EVERY = 64;

function percentile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.ceil(q * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))];
}

/** Observers for tests and debugging: called after every engine step. */
export interface SimHooks {
  afterStep?: (now: number, event: EngineEvent, model: QueueModel, effects: Effect[]) => void;
}

export function simulate(
  partial: Partial<SimOptions> & FlakySimOptions & StackSimOptions = {},
  hooks: SimHooks = {},
): SimResult {
  const options: SimOptions & FlakySimOptions & StackSimOptions = { ...DEFAULT_OPTIONS, ...partial };
  validate(options);
  validateStacks(options);
  const stacks = new SimStacks(options, options.seed);
  const flaky = flakyFeaturesOn(options);
  validateFlaky(options);
  const coverage = options.quarantineCoverage ?? 0;
  const knownBreakage = options.breakageInKnownTests ?? 0.05;
  const classRates = riskClassRates(options);
  const wallStart = performance.now();
  const parallel = options.mode === 'parallel';
  const lanes = parallel ? options.lanes : 1;
  const T = options.ciMinutes * MINUTE;
  const end = options.hours * HOUR;
  const warmup = options.warmupHours * HOUR;

  // Independent streams: PR attributes, arrival times, run outcomes.
  const prRandom = rng(options.seed, 1);
  const arrivalRandom = rng(options.seed, 2);
  const runRandom = rng(options.seed, 3);
  // The flaky-aware queue's draws: PR attributes (risk class, estimate, known breakage), failing tests.
  const attrRandom = rng(options.seed, 4);
  const testRandom = rng(options.seed, 5);
  const hangRandom = rng(options.seed, 7);
  const hangRate = options.hangRate ?? 0;

  let model = newQueueModel('main', options.mode);
  let ids = 0;
  let now = 0;
  let seq = 0;
  let steps = 0;
  const heap = new EventHeap<SimEvent>();
  const prs = new Map<number, PrInfo>();
  const cancelledRuns = new Set<string>();
  /** Per started run: the PRs its test commit holds (runs built on it start from these). */
  const builtContents = new Map<string, number[]>();
  /** Main (non-bisection) runs in flight: runId → start time, for slot utilisation. */
  const mainStarted = new Map<string, number>();
  let mainBusy = 0;
  const mainEnded = (runId: string) => {
    const started = mainStarted.get(runId);
    if (started === undefined) return;
    mainStarted.delete(runId);
    mainBusy += Math.max(0, now - Math.max(started, warmup));
  };
  const scheduledTicks = new Set<number>();
  const timesInQueue: number[] = [];
  const stats = {
    merged: 0,
    failed: 0,
    failedNotBroken: 0,
    mergedBroken: 0,
    cancelled: 0,
    ciRuns: 0,
    bisectionRuns: 0,
    cancelledRuns: 0,
  };
  const figures: FlakySimFigures = {
    flakyIgnored: 0,
    retries: 0,
    retriesOfRealFailures: 0,
    runsFailedForReal: 0,
    quarantineEscapes: 0,
    probationRuns: 0,
    probationSlotsBusy: 0,
  };
  /** Runs that failed because a broken PR was in them (for retries of real failures). */
  const failedForReal = new Set<string>();
  const probationStarted = new Map<string, number>();
  let probationBusy = 0;
  const probationEnded = (runId: string) => {
    const started = probationStarted.get(runId);
    if (started === undefined) return;
    probationStarted.delete(runId);
    probationBusy += Math.max(0, now - Math.max(started, warmup));
  };
  let nextPr = 1;
  let exhausted = false;

  const schedule = (event: Unscheduled) => heap.push({ ...event, seq: seq++ } as SimEvent);
  const measuring = () => now >= warmup;

  const findRun = (runId: string): TestRun => {
    const runs = model.runs;
    for (let i = runs.length - 1; i >= 0; i--) if (runs[i].id === runId) return runs[i];
    throw new Error(`sim: the engine started an unknown run ${runId}`);
  };

  const handle = (effects: Effect[]) => {
    for (const effect of effects) {
      switch (effect.type) {
        case 'startTestRun': {
          const run = findRun(effect.runId);
          // What the test commit holds, built on the basis the engine named: the commit of the run
          // below (those of its PRs this run's base names: a wrong basis would lose some) plus the
          // run's own PRs, or the target plus basePrNumbers ∪ prNumbers.
          let contents: number[];
          if (effect.basis.on === 'run') {
            const below = builtContents.get(effect.basis.runId);
            if (below === undefined)
              throw new Error(
                `sim: run ${run.id} is built on run ${effect.basis.runId}, which never started`,
              );
            const base = new Set(run.basePrNumbers);
            contents = [...below.filter((pr) => base.has(pr)), ...run.prNumbers];
          } else contents = [...run.basePrNumbers, ...run.prNumbers];
          builtContents.set(run.id, contents);
          const brokenPrs = contents.filter((pr) => prs.get(pr)?.broken);
          const broken = brokenPrs.length > 0;
          const flaked = runRandom() < options.flakeRate;
          const duration = options.ciJitter > 0 ? T * (1 + options.ciJitter * (2 * runRandom() - 1)) : T;
          const passed = !broken && !flaked;
          const failures = flaky && !passed ? failingTests(brokenPrs, flaked) : undefined;
          // A check that never reports: no verdict comes, the testing timeout ends the run.
          const hangs = hangRate > 0 && hangRandom() < hangRate;
          if (!hangs)
            schedule({
              time: now + duration,
              kind: 'finish',
              runId: run.id,
              passed,
              ...(failures ? { failures } : {}),
            });
          if (!run.isBisection) mainStarted.set(run.id, now);
          if (run.isProbation) probationStarted.set(run.id, now);
          if (measuring()) {
            stats.ciRuns++;
            if (run.isBisection) stats.bisectionRuns++;
            if (run.retryOf) {
              figures.retries++;
              if (failedForReal.has(run.retryOf)) figures.retriesOfRealFailures++;
            }
            if (run.isProbation) figures.probationRuns++;
          }
          if (broken) failedForReal.add(run.id);
          break;
        }
        case 'cancelTestRun':
          cancelledRuns.add(effect.runId);
          mainEnded(effect.runId);
          probationEnded(effect.runId);
          if (measuring()) stats.cancelledRuns++;
          break;
        case 'merge':
          schedule({ time: now, kind: 'merge', runId: effect.runId });
          break;
        case 'stateChanged': {
          const pr = prs.get(effect.prNumber) as PrInfo;
          if (effect.to === 'merged' && pr.stack !== undefined) stacks.merged(pr.stack, effect.prNumber, now);
          if (effect.to === 'pending' && effect.from === 'not_ready' && options.batchSize !== null) {
            scheduleTick(now + options.batchWaitMinutes * MINUTE);
          }
          if (
            options.keepBacklog &&
            (effect.to === 'merged' || effect.to === 'failed' || effect.to === 'cancelled')
          )
            replacements++;
          if (!measuring()) break;
          if (effect.to === 'merged') {
            stats.merged++;
            if (pr.broken) stats.mergedBroken++;
            if (pr.broken && pr.breakageKnown) figures.quarantineEscapes++;
            if (pr.submittedAt >= warmup) timesInQueue.push((now - pr.submittedAt) / MINUTE);
          } else if (effect.to === 'failed') {
            stats.failed++;
            if (!pr.broken) stats.failedNotBroken++;
          } else if (effect.to === 'cancelled') {
            stats.cancelled++;
          }
          break;
        }
      }
    }
  };

  const scheduleTick = (time: number) => {
    if (time <= now || time > end || scheduledTicks.has(time)) return;
    scheduledTicks.add(time);
    schedule({ time, kind: 'tick' });
  };

  let replacements = 0;
  const apply = (event: EngineEvent) => {
    const result = step(model, event, { now, newId: () => `s${++ids}` });
    model = result.model;
    steps++;
    hooks.afterStep?.(now, event, model, result.effects);
    handle(result.effects);
    const deadline = nextDeadline(model);
    if (deadline !== null) scheduleTick(deadline);
    if (steps % PRUNE_EVERY === 0) model = pruneModel(model);
  };

  /** One failing test per broken PR the run contains, and one for a flake; each known or not. */
  const failingTests = (brokenPrs: number[], flaked: boolean): FailedTest[] => {
    const out: FailedTest[] = brokenPrs.map((pr) => {
      const known = prs.get(pr)?.breakageKnown === true;
      return { name: `breakage of #${pr}`, quarantined: known, flaky: known, changedByPr: false };
    });
    if (flaked) {
      const known = testRandom() < coverage;
      out.push({ name: 'flake', quarantined: known, flaky: known, changedByPr: false });
    }
    return out;
  };

  /** One arrival: a PR, or (with --stack-share) sometimes a stack of PRs submitted at once, bottom first. */
  const arrive = () => {
    const depth = stacks.nextDepth();
    if (depth === 1) return createPr();
    const stack = stacks.begin();
    for (let i = 0, below: number | undefined; i < depth && !exhausted; i++) {
      below = createPr(stack, options.stackUnlinked ? undefined : below);
      if (below !== undefined) stacks.add(stack, below);
    }
  };
  const createPr = (stack?: number, stackedOn?: number): number | undefined => {
    if (options.maxPrs !== null && nextPr > options.maxPrs) {
      exhausted = true;
      return undefined;
    }
    const prNumber = nextPr++;
    // With risk classes, the class is drawn first (own stream); the broken draw keeps its place in the PR stream.
    const risky = classRates ? attrRandom() < (options.riskShare as number) : false;
    const rate = classRates ? (risky ? classRates.risky : classRates.rest) : options.failureRate;
    const broken = prRandom() < rate;
    const lane = Math.floor(prRandom() * lanes);
    const info: PrInfo = { broken, lane, submittedAt: now, ...(stack !== undefined ? { stack } : {}) };
    let riskEstimate: number | undefined;
    if (flaky) {
      info.breakageKnown = broken && attrRandom() < knownBreakage;
      if (classRates) {
        const right = attrRandom() < (options.riskAccuracy ?? 1);
        riskEstimate = risky === right ? classRates.risky : classRates.rest;
      }
    }
    prs.set(prNumber, info);
    const pr = {
      headSha: prNumber.toString(16).padStart(40, '0'),
      headBranch: `sim/${prNumber}`,
      title: `PR ${prNumber}`,
      author: 'sim',
      baseBranch: stackedOn === undefined ? 'main' : `sim/${stackedOn}`,
      mergeability: 'mergeable' as const,
      open: true,
      ...(stackedOn !== undefined ? { stackedOn } : {}),
    };
    apply({ type: 'submit', prNumber, pr, ...(riskEstimate !== undefined ? { riskEstimate } : {}) });
    if (parallel) apply({ type: 'impactedTargets', prNumber, sha: pr.headSha, targets: [`lane-${lane}`] });
    return prNumber;
  };

  apply({
    type: 'updateConfig',
    patch: {
      concurrency: options.concurrency,
      testingTimeoutMinutes: options.testingTimeoutMinutes ?? 0,
      batch: options.batchSize !== null,
      ...(options.batchSize !== null ? { batchingMinSize: options.batchSize } : {}),
      batchingMaxWaitTimeMinutes: options.batchWaitMinutes,
      ...(options.bisectionConcurrency !== null
        ? { bisectionConcurrency: options.bisectionConcurrency }
        : {}),
      canOptimisticallyMerge: options.optimistic,
      pendingFailureDepth: options.pendingFailureDepth,
      optimizationMode: options.skipRedundant ? 'bisection_skip_redundant_tests' : 'off',
      ...(flaky
        ? {
            flakyPolicy: options.flakyPolicy ?? 'off',
            flakyRetries: options.flakyRetries ?? 0,
            probationThreshold: options.probationThreshold ?? null,
          }
        : {}),
    },
  });

  while (nextPr - 1 < options.backlog && !exhausted) arrive();
  const arrivals = options.arrivalRate / stacks.prsPerArrival;
  if (options.arrivalRate > 0)
    schedule({ time: exponential(arrivalRandom, arrivals) * HOUR, kind: 'arrival' });

  let lastEvent = 0;
  let ranDry = false;
  for (;;) {
    // A standing backlog: PRs that left are replaced (between steps, never inside one).
    while (replacements > 0 && !exhausted) {
      replacements--;
      arrive();
    }
    const event = heap.pop();
    if (!event) ranDry = true;
    if (!event || event.time > end) break;
    now = lastEvent = event.time;
    switch (event.kind) {
      case 'arrival':
        arrive();
        if (!exhausted)
          schedule({ time: now + exponential(arrivalRandom, arrivals) * HOUR, kind: 'arrival' });
        break;
      case 'finish':
        if (cancelledRuns.delete(event.runId)) break; // the engine ignores results of cancelled runs
        mainEnded(event.runId);
        probationEnded(event.runId);
        apply({
          type: 'testRunFinished',
          runId: event.runId,
          passed: event.passed,
          ...(event.failures ? { failures: event.failures } : {}),
        });
        if (flaky && !event.passed && measuring()) {
          if (model.runs.find((r) => r.id === event.runId)?.flakyIgnored) figures.flakyIgnored++;
          if (failedForReal.has(event.runId)) figures.runsFailedForReal++;
        }
        failedForReal.delete(event.runId); // a retry of it has started by now, if there is one
        break;
      case 'merge':
        apply({ type: 'mergeSucceeded', runId: event.runId });
        break;
      case 'tick':
        scheduledTicks.delete(event.time);
        apply({ type: 'tick' });
        break;
    }
  }
  // The heap runs dry only when no PR is left and none will arrive: the figures stop there.
  const finishedAt = ranDry ? Math.min(end, Math.max(lastEvent, warmup)) : end;
  now = finishedAt;
  for (const runId of [...mainStarted.keys()]) mainEnded(runId);
  for (const runId of [...probationStarted.keys()]) probationEnded(runId);

  const measuredHours = Math.max(0, finishedAt - warmup) / HOUR;
  timesInQueue.sort((a, b) => a - b);
  const mean = timesInQueue.length ? timesInQueue.reduce((a, b) => a + b, 0) / timesInQueue.length : null;
  const bounds = analyticBounds({
    ciMinutes: options.ciMinutes,
    concurrency: options.concurrency,
    failureRate: options.failureRate,
    flakeRate: options.flakeRate,
    batchSize: options.batchSize ?? 1,
    lanes,
    antiFlake: options.optimistic && options.pendingFailureDepth >= 1,
    ...(flaky
      ? {
          flaky: {
            quarantineCoverage: coverage,
            flakyPolicy: options.flakyPolicy ?? 'off',
            flakyRetries: options.flakyRetries ?? 0,
            riskShare: classRates ? (options.riskShare as number) : 0,
            riskFailureRate: classRates ? classRates.risky : options.failureRate,
            riskAccuracy: options.riskAccuracy ?? 1,
            probationThreshold: options.probationThreshold ?? null,
          },
        }
      : {}),
  });
  const perHour = (n: number) => (measuredHours > 0 ? n / measuredHours : 0);
  const mergedPerHour = perHour(stats.merged);
  return {
    options,
    measuredHours,
    submitted: nextPr - 1,
    ...stats,
    waitingAtEnd: model.entries.filter((e) => !isTerminal(e.state)).length,
    mergedPerHour,
    resolvedPerHour: perHour(stats.merged + stats.failed),
    timeInQueueMinutes: {
      p50: percentile(timesInQueue, 0.5),
      p95: percentile(timesInQueue, 0.95),
      mean,
      max: timesInQueue.length ? timesInQueue[timesInQueue.length - 1] : null,
      samples: timesInQueue.length,
    },
    mainSlotUtilisation:
      measuredHours > 0 ? mainBusy / (options.concurrency * lanes * measuredHours * HOUR) : 0,
    ciRunsPerMerged: stats.merged > 0 ? stats.ciRuns / stats.merged : null,
    bounds,
    boundRatio: bounds.mergedPerHour > 0 ? mergedPerHour / bounds.mergedPerHour : null,
    ...(flaky
      ? { ...figures, probationSlotsBusy: measuredHours > 0 ? probationBusy / (measuredHours * HOUR) : 0 }
      : {}),
    ...(stacks.on ? stacks.figures() : {}),
    engineSteps: steps,
    wallMs: performance.now() - wallStart,
  };
}
