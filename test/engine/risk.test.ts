import { describe, expect, it } from 'vitest';
import { calibration, RiskModel, type RiskFacts } from '../../src/engine/risk/model.js';
import { rng, type Rng } from '../../src/sim/random.js';

/** A standard normal number (Box–Muller). */
const normal = (random: Rng) => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());

/**
 * A synthetic queue history with a known truth: 40 authors and 30 directories each with their own
 * risk, PR size, and a PR that failed before failing more often. Each PR's true failure
 * probability is a logistic function of these; the outcome is drawn from it.
 */
function history(seed: number, count: number) {
  const random = rng(seed, 7);
  const authors = Array.from({ length: 40 }, () => 0.8 * normal(random));
  const dirs = Array.from({ length: 30 }, () => 0.9 * normal(random));
  const out: { facts: RiskFacts; truth: number; failed: boolean }[] = [];
  const failedBefore: number[] = [];
  for (let i = 0; i < count; i++) {
    const author = Math.floor(random() * authors.length);
    const touched = [...new Set(Array.from({ length: 1 + Math.floor(random() * 3) }, () => Math.floor(random() * dirs.length)))];
    const size = Math.round(Math.exp(3 + 1.5 * normal(random)));
    // One PR in six is a resubmission of a PR that failed in the queue before.
    const retry = failedBefore.length > 0 && random() < 1 / 6;
    const z = -3.3 + authors[author] + Math.max(...touched.map((d) => dirs[d])) + 0.3 * Math.log1p(size / 100) + (retry ? 1 : 0);
    const truth = 1 / (1 + Math.exp(-z));
    const failed = random() < truth;
    if (failed) failedBefore.push(i);
    out.push({
      facts: {
        author: `dev${author}`,
        paths: touched.map((d) => `pkg/d${d}/file.ts`),
        size,
        earlierRuns: retry ? 1 : 0,
        earlierFailures: retry ? 1 : 0,
      },
      truth,
      failed,
    });
  }
  return out;
}

describe('risk model (online logistic regression on the queue history)', () => {
  it('is calibrated within 5 points on a synthetic history with known truth, and ranks the failures', () => {
    const data = history(1, 24_000);
    const model = new RiskModel();
    const scored: { estimate: number; failed: boolean; truth: number }[] = [];
    for (const [i, row] of data.entries()) {
      // Estimate before the outcome is known (as the queue does at submit), then learn from it.
      const estimate = model.estimate(row.facts);
      if (i >= 12_000) scored.push({ estimate, failed: row.failed, truth: row.truth });
      model.observe(row.facts, row.failed);
    }
    const fit = calibration(scored);
    const truth = calibration(scored.map((s) => ({ estimate: s.truth, failed: s.failed })));
    const meanEstimate = scored.reduce((a, s) => a + s.estimate, 0) / scored.length;
    const failureRate = fit.failures / scored.length;
    console.log(
      `risk model, last 12,000 of 24,000 PRs: failure rate ${(100 * failureRate).toFixed(1)} %, mean estimate ${(100 * meanEstimate).toFixed(1)} %, ` +
        `calibration error ${(100 * fit.expectedCalibrationError).toFixed(2)} points (truth: ${(100 * truth.expectedCalibrationError).toFixed(2)}), ` +
        `top 10 % riskiest carry ${(100 * fit.topShareOfFailures).toFixed(1)} % of failures (truth's top 10 %: ${(100 * truth.topShareOfFailures).toFixed(1)} %)`,
    );
    expect(fit.expectedCalibrationError).toBeLessThanOrEqual(0.05);
    expect(Math.abs(meanEstimate - failureRate)).toBeLessThan(0.01);
    // Ranking: the top 10 % by estimate carry far more than 10 % of the failures, close to what the truth's ranking gets.
    expect(fit.topShareOfFailures).toBeGreaterThan(0.25);
    expect(fit.topShareOfFailures).toBeGreaterThan(truth.topShareOfFailures - 0.1);
  });

  it('learns that a PR that failed before is riskier, and that a risky directory is', () => {
    const model = new RiskModel();
    const facts = (paths: string[], earlierFailures = 0): RiskFacts => ({ author: 'a', paths, size: 10, earlierRuns: earlierFailures, earlierFailures });
    for (let i = 0; i < 400; i++) {
      model.observe(facts(['safe/lib/x.ts']), false);
      model.observe(facts(['risky/lib/x.ts']), i % 3 === 0);
      model.observe(facts(['safe/lib/y.ts'], 1), i % 4 === 0);
    }
    expect(model.estimate(facts(['risky/lib/z.ts']))).toBeGreaterThan(3 * model.estimate(facts(['safe/lib/z.ts'])));
    expect(model.estimate(facts(['safe/lib/z.ts'], 1))).toBeGreaterThan(model.estimate(facts(['safe/lib/z.ts'])));
  });

  it('is deterministic and starts at its prior', () => {
    const fresh = new RiskModel({ prior: 0.07 });
    expect(fresh.estimate({ author: 'x', paths: [], size: 0, earlierRuns: 0, earlierFailures: 0 })).toBeCloseTo(0.07, 5);
    const a = new RiskModel();
    const b = new RiskModel();
    for (const row of history(2, 500)) {
      a.observe(row.facts, row.failed);
      b.observe(row.facts, row.failed);
    }
    const probe = history(3, 1)[0].facts;
    expect(a.estimate(probe)).toBe(b.estimate(probe));
  });
});
