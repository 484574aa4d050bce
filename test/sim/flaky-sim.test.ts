import { describe, expect, it } from 'vitest';
import { analyticBounds, simulate, type SimOptions, type FlakySimOptions } from '../../src/sim/index.js';
import { isolatedEnv, railyard } from '../support/cli.js';

/** A standing backlog: capacity runs (short ones: these check directions, the bench measures). */
const capacity = (options: Partial<SimOptions> & FlakySimOptions) =>
  simulate({ backlog: 300, keepBacklog: true, arrivalRate: 0, hours: 25, warmupHours: 1, ...options });

/** The queue with flakes and no flaky-aware input: two tests compare with it, and a seed always gives the same run. */
let withoutPolicy: ReturnType<typeof simulate> | undefined;
const flakesOnly = () => (withoutPolicy ??= capacity({ flakeRate: 0.05 }));

const NEW_KEYS = ['flakyIgnored', 'retries', 'retriesOfRealFailures', 'runsFailedForReal', 'quarantineEscapes', 'probationRuns', 'probationSlotsBusy'];

describe('railyard sim: the flaky-aware queue', () => {
  it('with none of its inputs, the result has the shape and figures it had before (no new keys)', () => {
    const r = capacity({ flakeRate: 0.05, hours: 6 });
    for (const key of NEW_KEYS) expect(r).not.toHaveProperty(key);
    expect(r.bounds).not.toHaveProperty('flaky');
    // A flaky input that changes nothing (coverage 0, policy off) gives the same figures, plus the new keys at 0.
    const same = capacity({ flakeRate: 0.05, hours: 6, quarantineCoverage: 0 });
    expect({ merged: same.merged, failed: same.failed, ciRuns: same.ciRuns }).toEqual({ merged: r.merged, failed: r.failed, ciRuns: r.ciRuns });
    expect([same.flakyIgnored, same.retries, same.probationRuns]).toEqual([0, 0, 0]);
  });

  it('ignoring failures of quarantined tests keeps good PRs from being evicted by flakes; escapes are counted', () => {
    const off = flakesOnly();
    const ignore = capacity({ flakeRate: 0.05, quarantineCoverage: 0.8, flakyPolicy: 'ignore_quarantined' });
    expect(off.failedNotBroken).toBeGreaterThan(5);
    expect(ignore.failedNotBroken).toBeLessThan(off.failedNotBroken / 2);
    expect(ignore.flakyIgnored).toBeGreaterThan(0);
    expect(ignore.mergedPerHour).toBeGreaterThan(off.mergedPerHour);
    // Nothing broken lands except through a known (quarantined) test, and each such landing is counted.
    expect(ignore.mergedBroken).toBe(ignore.quarantineEscapes);
    const noEscape = capacity({ flakeRate: 0.05, quarantineCoverage: 0.8, flakyPolicy: 'ignore_quarantined', breakageInKnownTests: 0 });
    expect([noEscape.mergedBroken, noEscape.quarantineEscapes]).toEqual([0, 0]);
  });

  it('retries failures of known-flaky tests and counts the retries (and those of real failures)', () => {
    const r = capacity({ flakeRate: 0.05, quarantineCoverage: 0.8, flakyRetries: 1 });
    expect(r.retries).toBeGreaterThan(0);
    expect(r.retriesOfRealFailures).toBeLessThanOrEqual(r.retries as number);
    expect(r.failedNotBroken).toBeLessThan(flakesOnly().failedNotBroken / 2);
    expect(r.mergedBroken).toBe(0);
  });

  it('probation: risky PRs tested alone first lift batch throughput, with no broken PR landing', () => {
    const risk = { batchSize: 4, skipRedundant: true, riskShare: 0.1, riskFailureRate: 0.35, hours: 13 };
    const plain = capacity(risk);
    const probation = capacity({ ...risk, probationThreshold: 0.2 });
    expect(probation.probationRuns).toBeGreaterThan(0);
    expect(probation.mergedPerHour).toBeGreaterThan(1.3 * plain.mergedPerHour);
    expect(probation.mergedBroken).toBe(0);
    expect(probation.bounds.flaky?.lineFailureRate).toBeCloseTo((0.05 - 0.035) / (1 - 0.035), 10);
  });

  it('bounds: the effective flake rate after coverage, the line failure rate after probation', () => {
    const base = { ciMinutes: 30, concurrency: 10, failureRate: 0.05, flakeRate: 0.05, batchSize: 1, lanes: 1, antiFlake: false };
    const flaky = { quarantineCoverage: 0.8, flakyPolicy: 'ignore_quarantined' as const, flakyRetries: 0, riskShare: 0, riskFailureRate: 0.05, riskAccuracy: 1, probationThreshold: null };
    expect(analyticBounds({ ...base, flaky }).flaky?.effectiveFlakeRate).toBeCloseTo(0.01, 10);
    expect(analyticBounds({ ...base, flaky }).effectiveFailureRate).toBeCloseTo(0.06, 10);
    const retry = analyticBounds({ ...base, flaky: { ...flaky, flakyPolicy: 'off', flakyRetries: 1 } });
    expect(retry.flaky?.effectiveFlakeRate).toBeCloseTo(0.05 * 0.2 + 0.05 * 0.8 * 0.05, 10);
    // 10 % of PRs at 35 % (the rest at 1.67 %), 80 % accuracy: the line keeps the misranked risky PRs.
    const probation = analyticBounds({ ...base, flakeRate: 0, batchSize: 4, flaky: { ...flaky, flakyPolicy: 'off', riskShare: 0.1, riskFailureRate: 0.35, riskAccuracy: 0.8, probationThreshold: 0.2 } });
    const rest = (0.05 - 0.035) / 0.9;
    const failOnProbation = 0.1 * 0.8 * 0.35 + 0.9 * 0.2 * rest;
    expect(probation.flaky?.probationShare).toBeCloseTo(0.1 * 0.8 + 0.9 * 0.2, 10);
    expect(probation.flaky?.lineFailureRate).toBeCloseTo((0.1 * 0.2 * 0.35 + 0.9 * 0.8 * rest) / (1 - failOnProbation), 10);
  });

  it('rejects inputs that cannot hold, naming the flag', () => {
    expect(() => simulate({ backlog: 10, riskShare: 0.5, riskFailureRate: 0.5, failureRate: 0.05 })).toThrow(/--risk-share 0.5 at --risk-failure-rate 0.5/);
    expect(() => simulate({ backlog: 10, riskFailureRate: 0.3 })).toThrow('--risk-failure-rate: give --risk-share too');
    expect(() => simulate({ backlog: 10, flakyRetries: 4 })).toThrow('--flaky-retries');
  });

  it('the CLI takes the flags and prints the new figures in --json and in the table', async () => {
    const env = isolatedEnv();
    const args = ['sim', '--backlog', '50', '--keep-backlog', '--arrival-rate', '0', '--hours', '4', '--flake-rate', '0.1', '--quarantine-coverage', '0.9', '--flaky-policy', 'ignore_quarantined'];
    const json = await railyard([...args, '--json'], env);
    expect(json.code).toBe(0);
    const result = JSON.parse(json.stdout);
    expect(result.options).toMatchObject({ quarantineCoverage: 0.9, flakyPolicy: 'ignore_quarantined' });
    expect(result.flakyIgnored).toBeGreaterThan(0);
    const table = await railyard(args, env);
    expect(table.stdout).toContain('flaky failures ignored');
    const bad = await railyard(['sim', '--backlog', '5', '--flaky-policy', 'sometimes'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('flaky-policy');
  });
});
