import { describe, expect, it } from 'vitest';
import { analyticBounds, simulate, type SimOptions, type SimResult } from '../../src/sim/index.js';
import { EventHeap } from '../../src/sim/heap.js';
import { isolatedEnv, railyard } from '../support/cli.js';

const withoutWallClock = ({ wallMs: _wallMs, ...rest }: SimResult) => rest;

/** A standing backlog: capacity runs. */
const capacity = (options: Partial<SimOptions>) =>
  simulate({ backlog: 300, keepBacklog: true, arrivalRate: 0, hours: 40, warmupHours: 1, ...options });

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

describe('analytic bounds (docs/decisions.md, "Simulator bounds")', () => {
  it('reproduces the round model figures for T = 30 min, p = 5 %', () => {
    const base = { ciMinutes: 30, failureRate: 0.05, flakeRate: 0, batchSize: 1, lanes: 1, antiFlake: false };
    const n10 = analyticBounds({ ...base, concurrency: 10 });
    expect(n10.speculative.prsPerRound).toBeCloseTo(8.03, 2);
    expect(n10.resolvedPerHour).toBeCloseTo(16.05, 1);
    expect(n10.capPerHour).toBeCloseTo(40, 5);
    expect(n10.speculative.runsPerPr).toBeCloseTo(1.25, 2);
    expect(analyticBounds({ ...base, concurrency: 25 }).resolvedPerHour).toBeCloseTo(28.9, 0);
    const batched = analyticBounds({ ...base, concurrency: 10, batchSize: 4 });
    expect(batched.model).toBe('batch_speculative');
    expect(batched.batching?.batchFailureRate).toBeCloseTo(0.185, 3);
    expect(batched.resolvedPerHour).toBeCloseTo(37.6, 0);
    expect(batched.capPerHour).toBeCloseTo(43.1, 0);
    expect(batched.batching?.perHour).toBeCloseTo(45.5, 0);
    expect(batched.batching?.runsPerPr).toBeCloseTo(0.44, 2);
  });

  it('counts flakes unless anti-flake is on, and multiplies by the lanes', () => {
    const base = { ciMinutes: 30, concurrency: 10, failureRate: 0.05, flakeRate: 0.05, batchSize: 1, lanes: 1 };
    expect(analyticBounds({ ...base, antiFlake: false }).effectiveFailureRate).toBeCloseTo(0.1, 10);
    expect(analyticBounds({ ...base, antiFlake: true }).effectiveFailureRate).toBeCloseTo(0.05, 10);
    // `concurrency` is per lane: each of the 4 lanes has all N = 10 slots.
    const lanes = analyticBounds({ ...base, antiFlake: true, lanes: 4 });
    expect(lanes.speculative.window).toBe(10);
    expect(lanes.resolvedPerHour).toBeCloseTo(4 * 16.05, 1);
    expect(lanes.idealPerHour).toBeCloseTo(80, 10);
  });
});

describe('event heap', () => {
  it('pops by time, then in the order events were scheduled', () => {
    const heap = new EventHeap<{ time: number; seq: number }>();
    const times = [5, 1, 3, 1, 9, 0, 3, 7, 2, 2];
    times.forEach((time, seq) => heap.push({ time, seq }));
    const out: [number, number][] = [];
    for (let e = heap.pop(); e; e = heap.pop()) out.push([e.time, e.seq]);
    const expected = times.map((time, seq) => [time, seq] as [number, number]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    expect(out).toEqual(expected);
  });
});

describe('railyard sim', () => {
  it('is deterministic for a seed, and another seed gives other figures', () => {
    const options: Partial<SimOptions> = { arrivalRate: 14, hours: 30, failureRate: 0.1, flakeRate: 0.05, ciJitter: 0.2, batchSize: 3, seed: 7 };
    const a = simulate(options);
    const b = simulate(options);
    expect(withoutWallClock(a)).toEqual(withoutWallClock(b));
    expect(a.merged).toBeGreaterThan(100);
    expect(withoutWallClock(simulate({ ...options, seed: 8 }))).not.toEqual(withoutWallClock(a));
  });

  it('with p = 0 and f = 0 merges N/T per hour with a deep backlog', () => {
    for (const concurrency of [3, 10]) {
      const r = capacity({ concurrency, failureRate: 0, flakeRate: 0, hours: 20, warmupHours: 0.25 });
      const ideal = (concurrency / 30) * 60;
      expect(Math.abs(r.mergedPerHour - ideal) / ideal).toBeLessThan(0.05);
      expect(r.failed).toBe(0);
      expect(r.ciRunsPerMerged).toBeCloseTo(1, 5);
      expect(r.waitingAtEnd).toBe(300);
    }
  });

  it('with 5 % broken PRs stays within the round-model bound and reaches ≥ 90 % of it (single mode)', () => {
    const runs = [1, 2, 3].map((seed) => capacity({ concurrency: 10, failureRate: 0.05, seed, hours: 60 }));
    const bound = runs[0].bounds;
    const merged = mean(runs.map((r) => r.mergedPerHour));
    const resolved = mean(runs.map((r) => r.resolvedPerHour));
    expect(merged).toBeGreaterThanOrEqual(0.9 * bound.mergedPerHour);
    // The round model is an approximation (real queues restart only what is behind a failure): allow 15 %.
    expect(resolved).toBeLessThanOrEqual(1.15 * bound.resolvedPerHour);
    for (const r of runs) {
      expect(r.resolvedPerHour).toBeLessThanOrEqual(bound.idealPerHour);
      expect(r.mergedBroken).toBe(0);
      expect(r.failedNotBroken).toBe(0);
      expect(r.ciRunsPerMerged).toBeGreaterThan(1);
    }
  });

  it('parallel mode with 4 disjoint lanes merges ≥ 3× single mode (concurrency per lane)', () => {
    const single = capacity({ concurrency: 10, seed: 3 });
    const parallel = capacity({ concurrency: 10, seed: 3, mode: 'parallel', lanes: 4 });
    expect(parallel.mergedPerHour).toBeGreaterThanOrEqual(3 * single.mergedPerHour);
    expect(parallel.mergedPerHour).toBeGreaterThanOrEqual(0.9 * parallel.bounds.mergedPerHour);
    // Lanes are ignored in single mode.
    expect(withoutWallClock(capacity({ concurrency: 10, seed: 3, lanes: 4 })).merged).toBe(single.merged);
    // Three whole simulations, CPU-bound: ~21 s beside the rest of the suite, 64 s once at load ~15.
    // What it asserts is figures, not speed, so the time limit is generous.
  }, 180_000);

  it('anti-flake (optimistic + pending failure depth 1) evicts far fewer good PRs under a 5 % flake rate', () => {
    const base: Partial<SimOptions> = { concurrency: 10, failureRate: 0.05, flakeRate: 0.05, seed: 4, hours: 30 };
    const plain = capacity(base);
    const antiFlake = capacity({ ...base, optimistic: true, pendingFailureDepth: 1 });
    expect(plain.failedNotBroken).toBeGreaterThan(10);
    expect(antiFlake.failedNotBroken).toBeLessThan(plain.failedNotBroken / 3);
    expect(antiFlake.mergedBroken).toBe(0);
  });

  it('batching with bisection isolates broken PRs, uses fewer runs per merged PR and reaches ≥ 90 % of the (d) bound', () => {
    const r = capacity({ concurrency: 10, batchSize: 4, skipRedundant: true, hours: 30 });
    expect(r.bisectionRuns).toBeGreaterThan(0);
    expect(r.mergedBroken).toBe(0);
    expect(r.failedNotBroken).toBe(0);
    expect(r.ciRunsPerMerged).toBeLessThan(1);
    expect(r.bounds.model).toBe('batch_speculative');
    expect(r.mergedPerHour).toBeGreaterThanOrEqual(0.9 * r.bounds.mergedPerHour);
  });

  it('at low load a PR spends about T in the queue', () => {
    const r = simulate({ arrivalRate: 4, hours: 200, concurrency: 10, failureRate: 0.05 });
    expect(r.timeInQueueMinutes.p50).toBe(30);
    expect(r.waitingAtEnd).toBeLessThan(10);
  });

  it('simulates 10,000 PRs quickly', () => {
    const r = simulate({ arrivalRate: 12, hours: 10_000, maxPrs: 10_000, concurrency: 10, failureRate: 0.05 });
    expect(r.submitted).toBe(10_000);
    expect(r.merged + r.failed).toBe(10_000);
    expect(r.waitingAtEnd).toBe(0);
    expect(r.wallMs).toBeLessThan(20_000); // the bench records the figure; this only catches a blow-up
  });
});

describe('railyard sim (CLI)', () => {
  it('--json prints one object with the figures and the bounds', async () => {
    const result = await railyard(['sim', '--backlog', '40', '--arrival-rate', '0', '--hours', '4', '--seed', '3', '--json'], isolatedEnv());
    expect(result.code).toBe(0);
    const out = JSON.parse(result.stdout);
    expect(typeof out.mergedPerHour).toBe('number');
    expect(out.mergedPerHour).toBeGreaterThan(0);
    expect(typeof out.timeInQueueMinutes.p50).toBe('number');
    expect(typeof out.timeInQueueMinutes.p95).toBe('number');
    expect(typeof out.ciRunsPerMerged).toBe('number');
    expect(out.bounds.resolvedPerHour).toBeCloseTo(16.05, 1);
    expect(out.options).toMatchObject({ backlog: 40, arrivalRate: 0, seed: 3, mode: 'single', concurrency: 10 });
  });

  it('prints a table, and rejects bad input with exit code 2', async () => {
    const env = isolatedEnv();
    const table = await railyard(['sim', '--arrival-rate', '6', '--hours', '10'], env);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/merged PRs \/ hour/);
    expect(table.stdout).toMatch(/bound \(speculative/);
    const bad = await railyard(['sim', '--failure-rate', '2'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--failure-rate: must be ≤ 1/);
    const badJson = await railyard(['sim', '--arrival-rate', '0', '--json'], env);
    expect(badJson.code).toBe(2);
    expect(JSON.parse(badJson.stdout).error.message).toMatch(/nothing to simulate/);
  });
});
