/**
 * What `railyard sim` takes and gives: its options (with the flaky-aware queue's inputs), their
 * defaults and checks, and the figures of a result. The simulation itself is in simulate.ts.
 */
import type { FlakyPolicy } from '../contract/constants.js';
import type { Bounds } from './bounds.js';

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

/** Stacked PRs (docs/merge-queue.md, "Stacked PRs"); absent = no stacks. */
export interface StackSimOptions {
  /** Share of PRs that arrive in stacks (each stack submitted at once, each PR based on the one below). */
  stackShare?: number;
  /** Depth of a stack, drawn uniformly from [min, max]; default [2, 3]. */
  stackDepth?: [number, number];
  /** The same PRs, arriving the same way, but not linked: what stacking costs is measured against this. */
  stackUnlinked?: boolean;
}

/** The figures of stacked PRs (in the result only with --stack-share). */
export interface StackSimFigures {
  /** Stacks submitted (over the whole run) and the PRs in them. */
  stacks: number;
  prsInStacks: number;
  /** Stacks whose every PR landed, in one merge. */
  stacksLanded: number;
  /** Stacks of which some PRs landed and others did not, or not in one merge (should stay 0). */
  stacksLandedPartly: number;
}

/** Parses `--stack-depth`: `N` or `MIN-MAX`, from 2 to 20. */
export function parseStackDepth(text: string): [number, number] {
  const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(text);
  const min = m ? Number(m[1]) : NaN;
  const max = m ? Number(m[2] ?? m[1]) : NaN;
  if (!(min >= 2 && max <= 20 && min <= max))
    throw new RangeError(`--stack-depth: "${text}" must be N or MIN-MAX with 2 ≤ MIN ≤ MAX ≤ 20 (e.g. 2-3)`);
  return [min, max];
}

export function validateStacks(o: StackSimOptions): void {
  if (o.stackShare !== undefined && !(o.stackShare >= 0 && o.stackShare <= 1))
    throw new RangeError('--stack-share: must be in [0, 1]');
  if (o.stackDepth !== undefined && o.stackShare === undefined)
    throw new RangeError('--stack-depth: give --stack-share too');
}

/** The flaky-aware queue's inputs (docs/decisions.md, "Simulator flags"); absent = off. */
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
  /** Share of runs in which a required check never reports (the run waits for the timeout); default 0. */
  hangRate?: number;
  /** The queue's testingTimeoutMinutes, minutes or "auto"; default 0 (none). */
  testingTimeoutMinutes?: number | 'auto';
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

export interface SimResult extends Partial<FlakySimFigures>, Partial<StackSimFigures> {
  options: SimOptions & FlakySimOptions & StackSimOptions;
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
  timeInQueueMinutes: {
    p50: number | null;
    p95: number | null;
    mean: number | null;
    max: number | null;
    samples: number;
  };
  ciRunsPerMerged: number | null;
  bounds: Bounds;
  /** mergedPerHour / bounds.mergedPerHour. */
  boundRatio: number | null;
  engineSteps: number;
  /** Wall-clock milliseconds the simulation took (not deterministic). */
  wallMs: number;
}

/** With `riskShare`: the failure rates of the risky class and of the rest (which keeps the mean at `failureRate`). */
export function riskClassRates(o: SimOptions & FlakySimOptions): { risky: number; rest: number } | null {
  if (o.riskShare === undefined || o.riskShare === 0) return null;
  const risky = o.riskFailureRate ?? o.failureRate;
  const rest = o.riskShare >= 1 ? risky : (o.failureRate - o.riskShare * risky) / (1 - o.riskShare);
  if (rest < 0)
    throw new RangeError(
      `--risk-share ${o.riskShare} at --risk-failure-rate ${risky} already exceeds --failure-rate ${o.failureRate}: the other PRs would need a negative rate`,
    );
  return { risky, rest };
}

export function validateFlaky(o: FlakySimOptions): void {
  const share = (name: string, v: number | undefined) => {
    if (v !== undefined && !(v >= 0 && v <= 1)) throw new RangeError(`--${name}: must be in [0, 1]`);
  };
  share('quarantine-coverage', o.quarantineCoverage);
  share('breakage-in-known-tests', o.breakageInKnownTests);
  share('risk-share', o.riskShare);
  share('risk-failure-rate', o.riskFailureRate);
  share('risk-accuracy', o.riskAccuracy);
  share('probation-threshold', o.probationThreshold ?? undefined);
  share('hang-rate', o.hangRate);
  if (
    o.flakyRetries !== undefined &&
    !(Number.isInteger(o.flakyRetries) && o.flakyRetries >= 0 && o.flakyRetries <= 3)
  )
    throw new RangeError('--flaky-retries: must be an integer from 0 to 3');
  if (o.riskFailureRate !== undefined && o.riskShare === undefined)
    throw new RangeError('--risk-failure-rate: give --risk-share too');
}

export function validate(o: SimOptions): void {
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
  if (!(o.warmupHours >= 0 && o.warmupHours < o.hours))
    fail('--warmup-hours: must be ≥ 0 and less than hours');
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1) fail('--concurrency: must be an integer ≥ 1');
  if (o.batchSize !== null && (!Number.isInteger(o.batchSize) || o.batchSize < 1))
    fail('--batch-size: must be an integer ≥ 1');
  if (!(o.batchWaitMinutes >= 0)) fail('--batch-wait-minutes: must be ≥ 0');
  if (
    o.bisectionConcurrency !== null &&
    (!Number.isInteger(o.bisectionConcurrency) || o.bisectionConcurrency < 1)
  )
    fail('--bisection-concurrency: must be an integer ≥ 1');
  if (!Number.isInteger(o.pendingFailureDepth) || o.pendingFailureDepth < 0)
    fail('--pending-failure-depth: must be an integer ≥ 0');
  if (o.arrivalRate === 0 && o.backlog === 0) fail('nothing to simulate: give --arrival-rate or --backlog');
}
