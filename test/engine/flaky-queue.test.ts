import { describe, expect, it } from 'vitest';
import type { FailedTest } from '../../src/engine/index.js';
import { Harness, oracle } from './harness.js';

const test = (name: string, flags: Partial<Omit<FailedTest, 'name'>> = {}): FailedTest => ({
  name,
  quarantined: false,
  flaky: false,
  changedByPr: false,
  ...flags,
});
const stateChanges = (h: Harness, pr: number) =>
  h.effects.flatMap((e) => (e.type === 'stateChanged' && e.prNumber === pr ? [`${e.to}:${e.reason ?? ''}`] : []));

describe('flake-aware verdicts (flakyPolicy)', () => {
  it('off (the default): a failure only of a quarantined test fails the PR as before', () => {
    const h = new Harness({ concurrency: 2 });
    h.submit(1);
    h.finish(h.runOf(1).id, false, [test('a.spec > slow', { quarantined: true, flaky: true })]);
    expect(h.state(1)).toBe('failed');
  });

  it('ignore_quarantined: a run that failed only on quarantined tests counts as passed and lands, with the reason', () => {
    const h = new Harness({ concurrency: 2, flakyPolicy: 'ignore_quarantined' });
    h.submit(1);
    h.submit(2);
    const run = h.runOf(1);
    h.finish(run.id, false, [test('a.spec > slow', { quarantined: true }), test('b.spec > net', { quarantined: true })]);
    expect(h.run(run.id).flakyIgnored).toEqual(['a.spec > slow', 'b.spec > net']);
    expect(h.state(1)).toBe('merged');
    expect(stateChanges(h, 1)).toContain('tests_passed:FLAKY_FAILURES_IGNORED');
    expect(h.state(2)).toBe('testing'); // built on #1, not restarted
    expect(h.runOf(2).basePrNumbers).toEqual([1]);
  });

  it('ignore_quarantined: one failing test that is only known-flaky (not quarantined) fails the run', () => {
    const h = new Harness({ flakyPolicy: 'ignore_quarantined' });
    h.submit(1);
    h.finish(h.runOf(1).id, false, [test('q', { quarantined: true }), test('f', { flaky: true })]);
    expect(h.state(1)).toBe('failed');
  });

  it('ignore_flaky also ignores tests with flake history', () => {
    const h = new Harness({ flakyPolicy: 'ignore_flaky' });
    h.submit(1);
    h.finish(h.runOf(1).id, false, [test('q', { quarantined: true }), test('f', { flaky: true })]);
    expect(h.state(1)).toBe('merged');
  });

  it('never ignores (nor retries) a failing test whose file the PR changes', () => {
    const h = new Harness({ flakyPolicy: 'ignore_flaky', flakyRetries: 3 });
    h.submit(1);
    h.finish(h.runOf(1).id, false, [test('q', { quarantined: true, flaky: true, changedByPr: true })]);
    expect(h.state(1)).toBe('failed');
    expect(h.inProgress()).toEqual([]);
  });

  it('a failure without failing tests (none uploaded, a timeout) is an ordinary failure', () => {
    const h = new Harness({ flakyPolicy: 'ignore_flaky', flakyRetries: 1 });
    h.submit(1);
    h.finish(h.runOf(1).id, false, []);
    expect(h.state(1)).toBe('failed');
    h.submit(2);
    h.finish(h.runOf(2).id, false);
    expect(h.state(2)).toBe('failed');
  });
});

describe('in-queue retries (flakyRetries)', () => {
  it('retries a failure of known-flaky tests on the same base, keeping its place; what is built on it keeps running', () => {
    const h = new Harness({ concurrency: 3, flakyRetries: 1 });
    for (const n of [1, 2, 3]) h.submit(n);
    const first = h.runOf(2);
    const behind = h.runOf(3);
    h.finish(first.id, false, [test('net', { flaky: true })]);
    const retry = h.runOf(2);
    expect(retry.id).not.toBe(first.id);
    expect({ base: retry.basePrNumbers, prs: retry.prNumbers, attempt: retry.attempt, retryOf: retry.retryOf, seq: retry.seq }).toEqual({
      base: [1],
      prs: [2],
      attempt: 2,
      retryOf: first.id,
      seq: first.seq,
    });
    expect(h.state(2)).toBe('testing');
    expect(h.reason(2)).toBe('FLAKY_FAILURE_RETRIED');
    expect(h.runOf(3).id).toBe(behind.id); // not restarted
    h.settle(oracle(new Set()));
    expect(h.target).toEqual([1, 2, 3]);
  });

  it('a passing run built on a retry lands it with itself, without optimistic merging (its commit contains it and passed)', () => {
    const h = new Harness({ concurrency: 2, flakyRetries: 1 });
    for (const n of [1, 2]) h.submit(n);
    const first = h.runOf(1);
    h.finish(first.id, false, [test('net', { flaky: true })]);
    const retry = h.runOf(1);
    expect(retry.retryOf).toBe(first.id);
    expect(h.runOf(2).basePrNumbers).toEqual([1]);
    h.finish(h.runOf(2).id, true);
    expect(h.target).toEqual([1, 2]);
    expect(h.merges.at(-1)).toMatchObject({ prNumbers: [1, 2], tested: [1, 2], runPassed: true });
    expect(h.state(1)).toBe('merged');
  });

  it('without a retry, a failed run is not landed by a passing run built on it (optimistic merging off)', () => {
    const h = new Harness({ concurrency: 2 });
    for (const n of [1, 2]) h.submit(n);
    h.finish(h.runOf(1).id, false, [test('net', { flaky: true })]);
    expect(h.state(1)).toBe('failed');
    expect(h.target).toEqual([]);
  });

  it('stops after flakyRetries attempts and fails the PR', () => {
    const h = new Harness({ flakyRetries: 2 });
    h.submit(1);
    for (let i = 0; i < 2; i++) {
      h.finish(h.runOf(1).id, false, [test('net', { flaky: true })]);
      expect(h.state(1)).toBe('testing');
    }
    h.finish(h.runOf(1).id, false, [test('net', { flaky: true })]);
    expect(h.state(1)).toBe('failed');
    expect(stateChanges(h, 1).filter((c) => c === 'testing:FLAKY_FAILURE_RETRIED')).toHaveLength(2);
  });

  it('does not retry a failure of a test that never flaked', () => {
    const h = new Harness({ flakyRetries: 3 });
    h.submit(1);
    h.finish(h.runOf(1).id, false, [test('net', { flaky: true }), test('new')]);
    expect(h.state(1)).toBe('failed');
  });

  it('a retried batch that fails again for real is bisected', () => {
    const h = new Harness({ concurrency: 1, batch: true, batchingMinSize: 2, flakyRetries: 1 });
    h.submit(1);
    h.submit(2);
    h.finish(h.runOf(1).id, false, [test('net', { flaky: true })]);
    expect(h.runOf(1).prNumbers).toEqual([1, 2]);
    h.finish(h.runOf(1).id, false, [test('real')]);
    expect(h.reason(1)).toBe('BISECTION_REQUIRED');
    h.settle(oracle(new Set([2])));
    expect(h.target).toEqual([1]);
    expect(h.state(2)).toBe('failed');
  });
});

describe('probation (probationThreshold)', () => {
  it('tests a risky PR alone off the line; the others form batches without it; it joins the line after passing', () => {
    const h = new Harness({ concurrency: 2, batch: true, batchingMinSize: 2, probationThreshold: 0.2 });
    h.submit(1, { riskEstimate: 0.05 });
    h.submit(2, { riskEstimate: 0.4 });
    h.submit(3, { riskEstimate: 0.01 });
    const probation = h.runOf(2);
    expect({ prs: probation.prNumbers, base: probation.basePrNumbers, bisection: probation.isBisection, probation: probation.isProbation }).toEqual({
      prs: [2],
      base: [],
      bisection: true,
      probation: true,
    });
    expect(h.reason(2)).toBe('PROBATION_REQUIRED');
    expect(h.runOf(1).prNumbers).toEqual([1, 3]);
    h.finish(probation.id, true);
    // The line is in flight: it joins the line instead of landing under it.
    expect(h.state(2)).toBe('testing');
    expect(stateChanges(h, 2)).toContain('pending:PROBATION_PASSED');
    expect(h.runOf(2).basePrNumbers).toEqual([1, 3]);
    h.settle(oracle(new Set()));
    expect(h.target).toEqual([1, 3, 2]);
  });

  it('a risky PR that fails its probation fails alone and nothing in the line restarts', () => {
    const h = new Harness({ concurrency: 2, probationThreshold: 0.2 });
    h.submit(1, { riskEstimate: 0.5 });
    h.submit(2);
    const line = h.runOf(2);
    expect(line.basePrNumbers).toEqual([]);
    h.finish(h.runOf(1).id, false);
    expect(h.state(1)).toBe('failed');
    expect(h.runOf(2).id).toBe(line.id);
  });

  it('lands a passing probation run directly when its commit is still the target plus itself and the line is empty', () => {
    const h = new Harness({ probationThreshold: 0.2 });
    h.submit(1, { riskEstimate: 0.9 });
    h.finish(h.runOf(1).id, true);
    expect(h.target).toEqual([1]);
    expect(h.merges[0].tested).toEqual([1]);
  });

  it('null (the default) and estimates at or below the threshold change nothing', () => {
    const h = new Harness({ concurrency: 2 });
    h.submit(1, { riskEstimate: 0.99 });
    expect(h.runOf(1).isBisection).toBe(false);
    const g = new Harness({ concurrency: 2, probationThreshold: 0.5 });
    g.submit(1, { riskEstimate: 0.5 });
    expect(g.runOf(1).isBisection).toBe(false);
  });
});
