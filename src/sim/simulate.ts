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
import type { FlakyPolicy } from '../contract/constants.js';
import type { Effect, EngineEvent, FailedTest, QueueModel, TestRun } from '../engine/index.js';
import { isTerminal, newQueueModel, nextDeadline, step } from '../engine/index.js';
import { analyticBounds, type Bounds } from './bounds.js';
import { EventHeap } from './heap.js';
import { exponential, rng } from './random.js';

export interface SimOptions {
  /** Poisson arrivals, PRs per hour (0 = none). */
  arrivalRate: number;
  /** PRs already waiting at time 0. */
  backlog: number;
  /** Keep the backlog standing: each PR that leaves the queue is replaced by a new one at once. */
  keepBacklog: boolean;
  /** T: minutes one test run takes. */
  ciMinutes: number;
  /** Run durations uniform in T·[1 − j, 1 + j]; 0 = every run takes exactly T. */
  ciJitter: number;
  /** p: probability that a PR is really broken. */
  failureRate: number;
  /** f: probability that a test run fails for no reason. */
  flakeRate: number;
  /** K: impacted targets come from K disjoint groups (parallel mode only). */
  lanes: number;
  /** Virtual time simulated. */
  hours: number;
  /** Merges before this and PRs submitted before this are left out of the figures. */
  warmupHours: number;
  seed: number;
  mode: 'single' | 'parallel';
  concurrency: number;
  /** Batching on with this target size; null = off. */
  batchSize: number | null;
  batchWaitMinutes: number;
  /** null = the queue's default (follows concurrency). */
  bisectionConcurrency: number | null;
  optimistic: boolean;
  pendingFailureDepth: number;
  skipRedundant: boolean;
  /** Create no more than this many PRs (backlog included), then run until the queue is empty; null = no limit. */
  maxPrs: number | null;
}

/** The flaky-aware queue's inputs (docs/decisions.md "Round 3", "Simulator flags"); absent = off. */
export interface FlakySimOptions {
  /** C: share of flaky failures whose failing test is known (quarantined, with flake history). */
  quarantineCoverage?: number;
  flakyPolicy?: FlakyPolicy;
  flakyRetries?: number;
  /** Share of broken PRs whose breakage shows only in a known (quarantined / flaky) test; default 0.05. */
  breakageInKnownTests?: number;
  /** S: share of PRs in the risky class. */
  riskShare?: number;
  /** P: failure probability of the risky class. */
  riskFailureRate?: number;
  /** A: how often a PR's estimate is its true class's rate; default 1. */
  riskAccuracy?: number;
  probationThreshold?: number | null;
}

const FLAKY_KEYS = [
  'quarantineCoverage',
  'flakyPolicy',
  'flakyRetries',
  'breakageInKnownTests',
  'riskShare',
  'riskFailureRate',
  'riskAccuracy',
  'probationThreshold',
] as const satisfies readonly (keyof FlakySimOptions)[];

/** Whether any flaky-aware input is given. */
export const flakyFeaturesOn = (o: FlakySimOptions): boolean => FLAKY_KEYS.some((k) => o[k] !== undefined);

/** The figures of the flaky-aware queue (in the result only when one of its inputs is given). */
export interface FlakySimFigures {
  /** Test runs whose failure counted as passed (flakyPolicy). */
  flakyIgnored: number;
  /** Retries started (flakyRetries). */
  retries: number;
  /** Retries of a run that had failed because a PR in it was broken (retried by mistake). */
  retriesOfRealFailures: number;
  /** Test runs that finished failed because a PR in them was broken (what retriesOfRealFailures is a share of). */
  runsFailedForReal: number;
  /** Broken PRs that landed through an ignored failure of a known test (counted in mergedBroken too). */
  quarantineEscapes: number;
  /** Probation runs started (counted in ciRuns and bisectionRuns too). */
  probationRuns: number;
  /** Mean probation runs in flight over the measured time (the slots probation used). */
  probationSlotsBusy: number;
}

export const DEFAULT_OPTIONS: SimOptions = {
  arrivalRate: 10,
  backlog: 0,
  keepBacklog: false,
  ciMinutes: 30,
  ciJitter: 0,
  failureRate: 0.05,
  flakeRate: 0,
  lanes: 1,
  hours: 24,
  warmupHours: 0,
  seed: 1,
  mode: 'single',
  concurrency: 10,
  batchSize: null,
  batchWaitMinutes: 5,
  bisectionConcurrency: null,
  optimistic: false,
  pendingFailureDepth: 0,
  skipRedundant: false,
  maxPrs: null,
};

export interface SimResult extends Partial<FlakySimFigures> {
  options: SimOptions & FlakySimOptions;
  /** Virtual hours the figures cover: from the warm-up to `hours`, or to the last event when the queue emptied for good. */
  measuredHours: number;
  submitted: number;
  merged: number;
  /** PRs that failed (evicted). */
  failed: number;
  /** Failed PRs that were not broken: evicted by a flaky run. */
  failedNotBroken: number;
  /** Broken PRs that merged (should stay 0: nothing broken passes). */
  mergedBroken: number;
  /** PRs cancelled (the simulator cancels none; kept for completeness). */
  cancelled: number;
  /** Test runs started (every startTestRun), main and bisection. */
  ciRuns: number;
  bisectionRuns: number;
  /** Test runs the engine cancelled (restarts behind a failure, …). */
  cancelledRuns: number;
  /** Share of the main slots (`concurrency`, per lane in parallel mode) busy with a run over the measured time (cancelled runs count until cancelled). */
  mainSlotUtilisation: number;
  /** PRs still in the queue at the end. */
  waitingAtEnd: number;
  mergedPerHour: number;
  /** (merged + failed) per hour: what the round model counts. */
  resolvedPerHour: number;
  /** Submit → merged, minutes, over PRs submitted after the warm-up that merged. */
  timeInQueueMinutes: { p50: number | null; p95: number | null; mean: number | null; max: number | null; samples: number };
  ciRunsPerMerged: number | null;
  bounds: Bounds;
  /** mergedPerHour / bounds.mergedPerHour. */
  boundRatio: number | null;
  engineSteps: number;
  /** Wall-clock milliseconds the simulation took (not deterministic). */
  wallMs: number;
}

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

/**
 * Drops what the engine can no longer need: runs that are not in progress and that no entry in
 * the queue is in, and terminal entries no kept run mentions (as base, unit or merge). A kept
 * run's base PRs must stay findable: the engine tells "merged" from "gone" by their entries.
 */
export function pruneModel(model: QueueModel): QueueModel {
  const liveRuns = new Set<string>();
  let terminal = 0;
  for (const e of model.entries) {
    if (isTerminal(e.state)) terminal++;
    else if (e.testRunId) liveRuns.add(e.testRunId);
  }
  const runs = model.runs.filter((r) => r.status === 'in_progress' || liveRuns.has(r.id));
  if (terminal === 0 && runs.length === model.runs.length) return model;
  const referenced = new Set<number>();
  for (const r of runs) {
    for (const pr of r.basePrNumbers) referenced.add(pr);
    for (const pr of r.prNumbers) referenced.add(pr);
    for (const pr of r.mergePrNumbers ?? []) referenced.add(pr);
  }
  for (const e of model.entries) {
    if (isTerminal(e.state) || !e.bisectKnownFailure) continue;
    for (const pr of e.bisectKnownFailure.prs) referenced.add(pr);
    for (const pr of e.bisectKnownFailure.base) referenced.add(pr);
  }
  const entries = model.entries.filter((e) => !isTerminal(e.state) || referenced.has(e.prNumber));
  return { ...model, entries, runs };
}

/** Observers for tests and debugging: called after every engine step. */
export interface SimHooks {
  afterStep?: (now: number, event: EngineEvent, model: QueueModel, effects: Effect[]) => void;
}

export function simulate(partial: Partial<SimOptions> & FlakySimOptions = {}, hooks: SimHooks = {}): SimResult {
  const options: SimOptions & FlakySimOptions = { ...DEFAULT_OPTIONS, ...partial };
  validate(options);
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
  const stats = { merged: 0, failed: 0, failedNotBroken: 0, mergedBroken: 0, cancelled: 0, ciRuns: 0, bisectionRuns: 0, cancelledRuns: 0 };
  const figures: FlakySimFigures = { flakyIgnored: 0, retries: 0, retriesOfRealFailures: 0, runsFailedForReal: 0, quarantineEscapes: 0, probationRuns: 0, probationSlotsBusy: 0 };
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
            if (below === undefined) throw new Error(`sim: run ${run.id} is built on run ${effect.basis.runId}, which never started`);
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
          schedule({ time: now + duration, kind: 'finish', runId: run.id, passed, ...(failures ? { failures } : {}) });
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
          if (effect.to === 'pending' && effect.from === 'not_ready' && options.batchSize !== null) {
            scheduleTick(now + options.batchWaitMinutes * MINUTE);
          }
          if (options.keepBacklog && (effect.to === 'merged' || effect.to === 'failed' || effect.to === 'cancelled')) replacements++;
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

  const createPr = () => {
    if (options.maxPrs !== null && nextPr > options.maxPrs) {
      exhausted = true;
      return;
    }
    const prNumber = nextPr++;
    // With risk classes, the class is drawn first (own stream); the broken draw keeps its place in the PR stream.
    const risky = classRates ? attrRandom() < (options.riskShare as number) : false;
    const rate = classRates ? (risky ? classRates.risky : classRates.rest) : options.failureRate;
    const broken = prRandom() < rate;
    const lane = Math.floor(prRandom() * lanes);
    const info: PrInfo = { broken, lane, submittedAt: now };
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
      baseBranch: 'main',
      mergeability: 'mergeable' as const,
      open: true,
    };
    apply({ type: 'submit', prNumber, pr, ...(riskEstimate !== undefined ? { riskEstimate } : {}) });
    if (parallel) apply({ type: 'impactedTargets', prNumber, sha: pr.headSha, targets: [`lane-${lane}`] });
  };

  apply({
    type: 'updateConfig',
    patch: {
      concurrency: options.concurrency,
      testingTimeoutMinutes: 0,
      batch: options.batchSize !== null,
      ...(options.batchSize !== null ? { batchingMinSize: options.batchSize } : {}),
      batchingMaxWaitTimeMinutes: options.batchWaitMinutes,
      ...(options.bisectionConcurrency !== null ? { bisectionConcurrency: options.bisectionConcurrency } : {}),
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

  for (let i = 0; i < options.backlog && !exhausted; i++) createPr();
  if (options.arrivalRate > 0) schedule({ time: exponential(arrivalRandom, options.arrivalRate) * HOUR, kind: 'arrival' });

  let lastEvent = 0;
  let ranDry = false;
  for (;;) {
    // A standing backlog: PRs that left are replaced (between steps, never inside one).
    while (replacements > 0 && !exhausted) {
      replacements--;
      createPr();
    }
    const event = heap.pop();
    if (!event) ranDry = true;
    if (!event || event.time > end) break;
    now = lastEvent = event.time;
    switch (event.kind) {
      case 'arrival':
        createPr();
        if (!exhausted) schedule({ time: now + exponential(arrivalRandom, options.arrivalRate) * HOUR, kind: 'arrival' });
        break;
      case 'finish':
        if (cancelledRuns.delete(event.runId)) break; // the engine ignores results of cancelled runs
        mainEnded(event.runId);
        probationEnded(event.runId);
        apply({ type: 'testRunFinished', runId: event.runId, passed: event.passed, ...(event.failures ? { failures: event.failures } : {}) });
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
    mainSlotUtilisation: measuredHours > 0 ? mainBusy / (options.concurrency * lanes * measuredHours * HOUR) : 0,
    ciRunsPerMerged: stats.merged > 0 ? stats.ciRuns / stats.merged : null,
    bounds,
    boundRatio: bounds.mergedPerHour > 0 ? mergedPerHour / bounds.mergedPerHour : null,
    ...(flaky ? { ...figures, probationSlotsBusy: measuredHours > 0 ? probationBusy / (measuredHours * HOUR) : 0 } : {}),
    engineSteps: steps,
    wallMs: performance.now() - wallStart,
  };
}

/** With `riskShare`: the failure rates of the risky class and of the rest (which keeps the mean at `failureRate`). */
function riskClassRates(o: SimOptions & FlakySimOptions): { risky: number; rest: number } | null {
  if (o.riskShare === undefined || o.riskShare === 0) return null;
  const risky = o.riskFailureRate ?? o.failureRate;
  const rest = o.riskShare >= 1 ? risky : (o.failureRate - o.riskShare * risky) / (1 - o.riskShare);
  if (rest < 0)
    throw new RangeError(
      `--risk-share ${o.riskShare} at --risk-failure-rate ${risky} already exceeds --failure-rate ${o.failureRate}: the other PRs would need a negative rate`,
    );
  return { risky, rest };
}

function validateFlaky(o: FlakySimOptions): void {
  const share = (name: string, v: number | undefined) => {
    if (v !== undefined && !(v >= 0 && v <= 1)) throw new RangeError(`--${name}: must be in [0, 1]`);
  };
  share('quarantine-coverage', o.quarantineCoverage);
  share('breakage-in-known-tests', o.breakageInKnownTests);
  share('risk-share', o.riskShare);
  share('risk-failure-rate', o.riskFailureRate);
  share('risk-accuracy', o.riskAccuracy);
  share('probation-threshold', o.probationThreshold ?? undefined);
  if (o.flakyRetries !== undefined && !(Number.isInteger(o.flakyRetries) && o.flakyRetries >= 0 && o.flakyRetries <= 3))
    throw new RangeError('--flaky-retries: must be an integer from 0 to 3');
  if (o.riskFailureRate !== undefined && o.riskShare === undefined) throw new RangeError('--risk-failure-rate: give --risk-share too');
}

function validate(o: SimOptions): void {
  const fail = (message: string) => {
    throw new RangeError(message);
  };
  if (!(o.arrivalRate >= 0)) fail('--arrival-rate: must be ≥ 0');
  if (!Number.isInteger(o.backlog) || o.backlog < 0) fail('--backlog: must be an integer ≥ 0');
  if (!(o.ciMinutes > 0)) fail('--ci-minutes: must be > 0');
  if (!(o.ciJitter >= 0 && o.ciJitter < 1)) fail('--ci-jitter: must be in [0, 1)');
  if (!(o.failureRate >= 0 && o.failureRate <= 1)) fail('--failure-rate: must be in [0, 1]');
  if (!(o.flakeRate >= 0 && o.flakeRate <= 1)) fail('--flake-rate: must be in [0, 1]');
  if (!Number.isInteger(o.lanes) || o.lanes < 1) fail('--lanes: must be an integer ≥ 1');
  if (!(o.hours > 0)) fail('--hours: must be > 0');
  if (!(o.warmupHours >= 0 && o.warmupHours < o.hours)) fail('--warmup-hours: must be ≥ 0 and less than hours');
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1) fail('--concurrency: must be an integer ≥ 1');
  if (o.batchSize !== null && (!Number.isInteger(o.batchSize) || o.batchSize < 1)) fail('--batch-size: must be an integer ≥ 1');
  if (!(o.batchWaitMinutes >= 0)) fail('--batch-wait-minutes: must be ≥ 0');
  if (o.bisectionConcurrency !== null && (!Number.isInteger(o.bisectionConcurrency) || o.bisectionConcurrency < 1))
    fail('--bisection-concurrency: must be an integer ≥ 1');
  if (!Number.isInteger(o.pendingFailureDepth) || o.pendingFailureDepth < 0) fail('--pending-failure-depth: must be an integer ≥ 0');
  if (o.arrivalRate === 0 && o.backlog === 0) fail('nothing to simulate: give --arrival-rate or --backlog');
}
