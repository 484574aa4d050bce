/**
 * The risk model: each PR's probability of failing its queue test, learnt online from the queue's
 * own history (no external service). A logistic regression over the facts the queue holds about a
 * PR — its author, the paths (or impacted targets) it touches, its size, how often those paths
 * failed recently, and the PR's own earlier runs — fitted one outcome at a time with AdaGrad and
 * a little L2. `estimate` gives `riskEstimate` (docs/decisions.md); `probationThreshold`
 * compares against it (engine/rules/probation.ts).
 *
 * Pure and deterministic (no clock, no randomness, no I/O): the same outcomes in the same order
 * give the same model. The caller feeds it outcomes in the order they happened.
 */

/** What the queue knows about one PR when it estimates (and later learns from) its risk. */
export interface RiskFacts {
  author: string;
  /** Touched paths or impacted targets; only their first two segments are features. */
  paths: readonly string[];
  /** Lines added plus removed (0 when not known). */
  size: number;
  /** This PR's earlier test runs in the queue (this submission and earlier ones) and how many failed. */
  earlierRuns: number;
  earlierFailures: number;
}

export interface RiskModelOptions {
  /** AdaGrad's base step; default 0.3. */
  learningRate?: number;
  /** L2 penalty per update; default 1e-4. */
  l2?: number;
  /** Weight of the newest outcome in a path's recent failure rate; default 0.05 (about the last 20 outcomes). */
  recentWeight?: number;
  /** The failure rate assumed before anything was learnt; default 0.05. */
  prior?: number;
}

/** A feature vector: names of the one-hot features present, and the numeric features by name. */
type Features = Map<string, number>;

const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));
const logit = (p: number) => Math.log(p / (1 - p));

/** The first two segments of a path (`src/engine/step.ts` → `src/engine`), the granularity paths are learnt at. */
export function pathArea(path: string): string {
  return path.split('/').filter(Boolean).slice(0, 2).join('/') || '/';
}

export class RiskModel {
  private readonly weights = new Map<string, number>();
  private readonly squares = new Map<string, number>();
  /** Per path area: exponentially weighted recent failure rate. */
  private readonly recent = new Map<string, number>();
  private readonly lr: number;
  private readonly l2: number;
  private readonly recentWeight: number;
  private readonly prior: number;
  /** Outcomes learnt so far. */
  observed = 0;

  constructor(options: RiskModelOptions = {}) {
    this.lr = options.learningRate ?? 0.3;
    this.l2 = options.l2 ?? 1e-4;
    this.recentWeight = options.recentWeight ?? 0.05;
    this.prior = options.prior ?? 0.05;
    this.weights.set('bias', logit(this.prior));
  }

  /** The PR's probability of failing, in (0, 1). */
  estimate(facts: RiskFacts): number {
    return sigmoid(this.score(this.features(facts)));
  }

  /** Learns one outcome: a test of a PR with these facts failed (because of the PR) or passed. */
  observe(facts: RiskFacts, failed: boolean): void {
    const x = this.features(facts);
    const gradient = sigmoid(this.score(x)) - (failed ? 1 : 0);
    for (const [name, value] of x) {
      if (value === 0) continue;
      const g = gradient * value + (name === 'bias' ? 0 : this.l2 * (this.weights.get(name) ?? 0));
      const sq = (this.squares.get(name) ?? 0) + g * g;
      this.squares.set(name, sq);
      this.weights.set(name, (this.weights.get(name) ?? 0) - (this.lr * g) / Math.sqrt(sq + 1e-8));
    }
    for (const area of new Set(facts.paths.map(pathArea))) {
      const before = this.recent.get(area) ?? this.prior;
      this.recent.set(area, before + this.recentWeight * ((failed ? 1 : 0) - before));
    }
    this.observed++;
  }

  private score(x: Features): number {
    let z = 0;
    for (const [name, value] of x) z += (this.weights.get(name) ?? 0) * value;
    return z;
  }

  private features(facts: RiskFacts): Features {
    const x: Features = new Map([['bias', 1]]);
    x.set(`author:${facts.author}`, 1);
    const areas = [...new Set(facts.paths.map(pathArea))];
    for (const area of areas) x.set(`area:${area}`, 1 / Math.sqrt(areas.length));
    x.set('size', Math.log1p(Math.max(0, facts.size)) / 5);
    // How often the riskiest area it touches failed recently, as log-odds against the prior.
    const rates = areas.map((a) => this.recent.get(a) ?? this.prior);
    const worst = Math.min(0.99, Math.max(0.001, rates.length ? Math.max(...rates) : this.prior));
    x.set('recentAreaFailures', logit(worst) - logit(this.prior));
    x.set('earlierFailed', facts.earlierFailures > 0 ? 1 : 0);
    x.set('earlierFailureShare', facts.earlierRuns > 0 ? facts.earlierFailures / facts.earlierRuns : 0);
    return x;
  }
}

/**
 * Calibration of estimates against outcomes: the expected calibration error over `bins` equal-width
 * bins (the |mean estimate − observed rate| of each bin, weighted by its share of the PRs), and the
 * share of all failures carried by the `top` share of PRs with the highest estimates.
 */
export function calibration(
  samples: readonly { estimate: number; failed: boolean }[],
  bins = 10,
  top = 0.1,
): { expectedCalibrationError: number; topShareOfFailures: number; failures: number } {
  const sums = Array.from({ length: bins }, () => ({ n: 0, estimate: 0, failed: 0 }));
  for (const s of samples) {
    const bin = sums[Math.min(bins - 1, Math.floor(s.estimate * bins))];
    bin.n++;
    bin.estimate += s.estimate;
    bin.failed += s.failed ? 1 : 0;
  }
  const ece = sums.reduce((acc, b) => (b.n ? acc + (b.n / samples.length) * Math.abs(b.estimate / b.n - b.failed / b.n) : acc), 0);
  const failures = samples.filter((s) => s.failed).length;
  const ranked = [...samples].sort((a, b) => b.estimate - a.estimate).slice(0, Math.round(samples.length * top));
  const topFailures = ranked.filter((s) => s.failed).length;
  return { expectedCalibrationError: ece, topShareOfFailures: failures ? topFailures / failures : 0, failures };
}
