/**
 * The analytic throughput bounds of the round model (docs/decisions.md, "Simulator bounds") for
 * one set of sim inputs. Rates are per hour. "Resolved" counts PRs that leave the queue (merged or
 * failed), as the round model does; "merged" scales that by the share of PRs expected to land.
 */
export interface BoundInputs {
  ciMinutes: number;
  concurrency: number;
  /** p: probability that a PR is really broken. */
  failureRate: number;
  /** f: probability that one test run fails for no reason. */
  flakeRate: number;
  /** B: 1 without batching. */
  batchSize: number;
  /** K: disjoint lanes (1 in single mode), each with its own `concurrency` slots. */
  lanes: number;
  /** Optimistic merging with pendingFailureDepth ≥ 1: a flaky failure is cleared by a passing successor. */
  antiFlake: boolean;
  /** The flaky-aware queue's inputs (absent: the bounds are those of the plain queue). */
  flaky?: FlakyBoundInputs;
}

export interface FlakyBoundInputs {
  /** C: share of flaky failures whose failing test is known. */
  quarantineCoverage: number;
  flakyPolicy: 'off' | 'ignore_quarantined' | 'ignore_flaky';
  flakyRetries: number;
  /** S and P: a share S of PRs fails with P (S = 0: no risk classes). */
  riskShare: number;
  riskFailureRate: number;
  /** A: the share of PRs whose estimate is their true class's rate. */
  riskAccuracy: number;
  probationThreshold: number | null;
}

/** The flaky-aware queue's corrections to the round model. */
export interface FlakyBound {
  /**
   * f_eff: the flake rate that still fails a run. Ignoring known tests: f·(1 − C); retrying them r
   * times: f·(1 − C) + f·C·f^r (a retry flakes again with f).
   */
  effectiveFlakeRate: number;
  /** π: share of PRs put on probation (estimated risky): S·A + (1 − S)·(1 − A) when P is above the threshold. */
  probationShare: number;
  /** φ: share of PRs that fail their probation. */
  probationFailShare: number;
  /** p_line: failure rate of the PRs that reach the line (probation passers are good). */
  lineFailureRate: number;
}

export interface SpeculativeBound {
  /** N: the slots of one lane (`concurrency` applies per lane in parallel mode). */
  window: number;
  /** R(N, p) = (1 − (1 − p)^N) / p: PRs resolved per round of T. */
  prsPerRound: number;
  resolvedPerHour: number;
  /** 1 / (p·T): the ceiling as N → ∞. */
  capPerHour: number | null;
  /** N / R: CI runs per resolved PR. */
  runsPerPr: number;
}

export interface BatchingBound {
  batchSize: number;
  /** q = 1 − (1 − p)^B (times (1 − f) for the flake when anti-flake is off). */
  batchFailureRate: number;
  /** (c) recursive halving: (1 + q·2·log2 B) / B runs per PR. */
  runsPerPr: number;
  /** (c) Dorfman: 1/B + 1 − (1 − p)^B runs per PR (test every member after a failed batch). */
  dorfmanRunsPerPr: number;
  /** (c) N / (T·c): what N runners can test without speculation. */
  perHour: number;
  /** (d) B·(1 − (1 − q)^N) / (q·T): chained batches. */
  speculativeResolvedPerHour: number;
  /** (d) B / (q·T). */
  speculativeCapPerHour: number | null;
  /** Mergify's B·N/T: every batch passes. */
  maxPerHour: number;
}

export interface Bounds {
  /** Which model `resolvedPerHour` comes from. */
  model: 'speculative' | 'batch_speculative';
  /** The failure probability the model uses: p with anti-flake on, else p + f. */
  effectiveFailureRate: number;
  lanes: number;
  /** (a) 1/T per lane. */
  serialPerHour: number;
  /** K·N/T (K·B·N/T with batching): every run passes. */
  idealPerHour: number;
  /** (b) per lane. */
  speculative: SpeculativeBound;
  /** (c)/(d) per lane, with batching on. */
  batching: BatchingBound | null;
  /** The bound for these inputs: the model above × K lanes ((e), each lane with its own N slots). */
  resolvedPerHour: number;
  /** `resolvedPerHour` × the share of PRs expected to merge. */
  mergedPerHour: number;
  /** The cap of the model (N → ∞) × K. */
  capPerHour: number | null;
  /** With the flaky-aware queue's inputs: the corrections applied above (p → p_line, f → f_eff). */
  flaky?: FlakyBound;
}

/** Σ_{k<n} (1 − x)^k, for real n ≥ 0. */
function prefix(n: number, x: number): number {
  if (x <= 0) return n;
  if (x >= 1) return Math.min(1, n);
  return (1 - (1 - x) ** n) / x;
}

const cap = (value: number) => (Number.isFinite(value) ? value : null);

export function analyticBounds(input: BoundInputs): Bounds {
  const T = input.ciMinutes / 60; // hours
  const flaky = input.flaky ? flakyBound(input) : null;
  // With probation, the line sees only the PRs that were not put on it or passed it.
  const p = flaky ? flaky.lineFailureRate : input.failureRate;
  const f = flaky ? flaky.effectiveFlakeRate : input.flakeRate;
  const B = Math.max(1, input.batchSize);
  const K = Math.max(1, input.lanes);
  const N = input.concurrency;
  const pe = input.antiFlake ? p : Math.min(1, p + f);

  const speculativeFor = (window: number): SpeculativeBound => {
    const r = prefix(window, pe);
    return {
      window,
      prsPerRound: r,
      resolvedPerHour: r / T,
      capPerHour: cap(1 / (pe * T)),
      runsPerPr: r > 0 ? window / r : Infinity,
    };
  };
  const batchingFor = (window: number): BatchingBound | null => {
    if (B <= 1) return null;
    const clean = (1 - p) ** B * (input.antiFlake ? 1 : 1 - f);
    const q = 1 - clean;
    const runsPerPr = (1 + q * 2 * Math.log2(B)) / B;
    return {
      batchSize: B,
      batchFailureRate: q,
      runsPerPr,
      dorfmanRunsPerPr: 1 / B + 1 - (1 - p) ** B,
      perHour: window / (T * runsPerPr),
      speculativeResolvedPerHour: (B * prefix(window, q)) / T,
      speculativeCapPerHour: cap(B / (q * T)),
      maxPerHour: (B * window) / T,
    };
  };

  const speculative = speculativeFor(N);
  const batching = batchingFor(N);
  const perLane = batching ? batching.speculativeResolvedPerHour : speculative.resolvedPerHour;
  const perLaneCap = batching ? batching.speculativeCapPerHour : speculative.capPerHour;
  // A flaky failure evicts a good PR only where a PR is tested alone without anti-flake.
  const mergedShare = (1 - p) * (B > 1 || input.antiFlake ? 1 : 1 - f);
  // Every PR that resolves in the line stands for 1 / (1 − φ) PRs: the others failed their probation (off the line's slots).
  const perLineResolved = flaky ? 1 / (1 - flaky.probationFailShare) : 1;
  if (flaky) {
    return {
      model: batching ? 'batch_speculative' : 'speculative',
      effectiveFailureRate: pe,
      lanes: K,
      serialPerHour: 1 / T,
      idealPerHour: (B * N * K) / T,
      speculative,
      batching,
      resolvedPerHour: perLane * K * perLineResolved,
      mergedPerHour: perLane * K * mergedShare,
      capPerHour: perLaneCap === null ? null : perLaneCap * K * perLineResolved,
      flaky,
    };
  }
  return {
    model: batching ? 'batch_speculative' : 'speculative',
    effectiveFailureRate: pe,
    lanes: K,
    serialPerHour: 1 / T,
    idealPerHour: (B * N * K) / T,
    speculative,
    batching,
    resolvedPerHour: perLane * K,
    mergedPerHour: perLane * K * mergedShare,
    capPerHour: perLaneCap === null ? null : perLaneCap * K,
  };
}

/** The flaky-aware corrections (see FlakyBound). */
function flakyBound(input: BoundInputs): FlakyBound {
  const o = input.flaky as FlakyBoundInputs;
  const f = input.flakeRate;
  const C = o.quarantineCoverage;
  let fe = f;
  if (o.flakyPolicy !== 'off') fe = f * (1 - C);
  else if (o.flakyRetries > 0) fe = f * (1 - C) + f * C * f ** o.flakyRetries;
  const S = o.riskShare;
  const P = o.riskFailureRate;
  const A = o.riskAccuracy;
  const rest = S > 0 && S < 1 ? (input.failureRate - S * P) / (1 - S) : input.failureRate;
  const riskyAbove = o.probationThreshold !== null && S > 0 && P > o.probationThreshold;
  const restAbove = o.probationThreshold !== null && S > 0 && rest > o.probationThreshold;
  // An estimate is the rate of the class it names: the right class with probability A.
  const onProbation = (risky: boolean) => (risky ? (A * (riskyAbove ? 1 : 0) + (1 - A) * (restAbove ? 1 : 0)) : (A * (restAbove ? 1 : 0) + (1 - A) * (riskyAbove ? 1 : 0)));
  const share = S > 0 ? S * onProbation(true) + (1 - S) * onProbation(false) : 0;
  const failOnProbation = S > 0 ? S * onProbation(true) * P + (1 - S) * onProbation(false) * rest : 0;
  const failInLine = S > 0 ? S * (1 - onProbation(true)) * P + (1 - S) * (1 - onProbation(false)) * rest : input.failureRate;
  return {
    effectiveFlakeRate: fe,
    probationShare: share,
    probationFailShare: failOnProbation,
    lineFailureRate: failOnProbation < 1 ? failInLine / (1 - failOnProbation) : 0,
  };
}
