// The merge-queue engine's ways of testing and landing, stepped through the test harness: predictive
// testing, priorities, batching and bisection, optimistic merging, what a test commit is built on and
// parallel lanes. Queue states and outside events: engine-states.test.ts.
import { describe, expect, it } from 'vitest';
import { nextDeadline } from '../../src/engine/index.js';
import { Harness, oracle } from './harness.js';

describe('predictive testing', () => {
  it('tests each PR on the PRs ahead of it and lands them in order', () => {
    const h = new Harness({ concurrency: 3 });
    for (const n of [1, 2, 3]) h.submit(n);
    expect(h.inProgress().map((r) => [r.prNumbers, r.basePrNumbers])).toEqual([
      [[1], []],
      [[2], [1]],
      [[3], [1, 2]],
    ]);
    // #3 passes first: it waits for #1 and #2 to land (no optimistic merging).
    h.finish(h.runOf(3).id, true);
    expect(h.state(3)).toBe('tests_passed');
    expect(h.target).toEqual([]);
    h.finish(h.runOf(1).id, true);
    expect(h.target).toEqual([1]);
    h.finish(h.runOf(2).id, true);
    expect(h.target).toEqual([1, 2, 3]);
    for (const m of h.merges)
      expect({ passed: m.runPassed, tested: m.tested }).toEqual({ passed: true, tested: m.targetAfter });
  });

  it('evicts a failing PR and retests the PRs behind it without it', () => {
    const h = new Harness({ concurrency: 3 });
    for (const n of [1, 2, 3]) h.submit(n);
    h.finish(h.runOf(1).id, false);
    expect(h.state(1)).toBe('failed');
    expect(h.reason(1)).toBe('TEST_RUN_REQUIRED_STATUS_FAILED');
    expect(h.runOf(2).basePrNumbers).toEqual([]);
    expect(h.runOf(3).basePrNumbers).toEqual([2]);
    expect(h.model.entries.find((e) => e.prNumber === 2)?.restarts).toBe(1);
    h.settle(oracle(new Set([1])));
    expect(h.target).toEqual([2, 3]);
  });

  it('a failure behind a failure waits for the one ahead before it is judged', () => {
    const h = new Harness({ concurrency: 2 });
    h.submit(1);
    h.submit(2);
    h.finish(h.runOf(2).id, false); // fails because #1 is broken, but #1 has not reported yet
    expect(h.state(2)).toBe('pending_failure');
    h.finish(h.runOf(1).id, false);
    expect(h.state(1)).toBe('failed');
    expect(h.state(2)).toBe('testing'); // retested on the target alone
    expect(h.reason(2)).toBe('PREREQUISITE_MERGE_ITEM_FAILED');
    h.finish(h.runOf(2).id, true);
    expect(h.target).toEqual([2]);
  });

  it('does not wait behind a failure that cannot land: new units are built without it and what is built on it', () => {
    const h = new Harness({ concurrency: 3 });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    h.finish(h.runOf(2).id, false); // judged once #1 is; #3 is built on it
    expect(h.state(2)).toBe('pending_failure');
    expect(h.runOf(4).basePrNumbers).toEqual([1]);
    h.finish(h.runOf(1).id, true);
    expect(h.state(2)).toBe('failed');
    expect(h.runOf(3).basePrNumbers).toEqual([4]);
    h.settle(oracle(new Set([2])));
    expect(h.target).toEqual([1, 4, 3]);
  });

  it('never runs more than concurrency tests at once', () => {
    const h = new Harness({ concurrency: 2 });
    for (let n = 1; n <= 6; n++) h.submit(n);
    expect(h.inProgress()).toHaveLength(2);
    h.settle(() => true);
    expect(h.maxInFlight.main).toBe(2);
    expect(h.target).toEqual([1, 2, 3, 4, 5, 6]);
  });
});

describe('priorities', () => {
  it('orders pending PRs by priority then submission; urgent interrupts running tests', () => {
    const h = new Harness({ concurrency: 1 });
    h.submit(1);
    h.submit(2, { priority: 'low' });
    h.submit(3, { priority: 'high' });
    expect(h.runOf(1).prNumbers).toEqual([1]);
    h.submit(4, { priority: 'urgent' });
    expect(h.state(1)).toBe('pending');
    expect(h.reason(1)).toBe('SKIP_THE_LINE_INTERRUPTED');
    expect(h.inProgress().map((r) => r.prNumbers)).toEqual([[4]]);
    h.settle(() => true);
    expect(h.target).toEqual([4, 3, 1, 2]);
  });

  it('a high (non-urgent) priority never interrupts a running test', () => {
    const h = new Harness({ concurrency: 1 });
    h.submit(1);
    h.submit(2, { priority: 'high' });
    expect(h.state(1)).toBe('testing');
    h.settle(() => true);
    expect(h.target).toEqual([1, 2]);
  });

  it('an urgent PR waiting for a bisection slot does not interrupt the line', () => {
    const h = new Harness({ concurrency: 1, bisectionConcurrency: 1, batch: true, batchingMinSize: 2 });
    h.submit(1, { priority: 'urgent' });
    h.submit(2, { priority: 'urgent' });
    h.submit(3);
    h.finish(h.runOf(1).id, false); // #1 is broken: the batch splits, #1 takes the one bisection slot
    expect(h.runOf(1).isBisection).toBe(true);
    expect(h.state(2)).toBe('pending');
    // #3's batch stops waiting: it is tested once, not interrupted for #2 (which waits for a bisection slot).
    h.now += 5 * 60_000;
    const effects = h.apply({ type: 'tick' });
    expect(effects.filter((e) => e.type !== 'stateChanged')).toEqual([
      { type: 'startTestRun', runId: h.runOf(3).id, basis: { on: 'target' } },
    ]);
    h.settle(oracle(new Set([1])));
    expect(h.state(1)).toBe('failed');
    expect(h.target).toEqual([3, 2]);
  });
});

describe('batching and bisection', () => {
  it('waits for a full batch or the maximum wait, then tests the batch as one unit', () => {
    const h = new Harness({
      batch: true,
      batchingMinSize: 3,
      batchingMaxWaitTimeMinutes: 10,
      concurrency: 2,
    });
    h.submit(1);
    h.submit(2);
    expect(h.inProgress()).toHaveLength(0);
    expect(nextDeadline(h.model)).toBe(h.now + 10 * 60_000);
    h.submit(3);
    expect(h.inProgress().map((r) => r.prNumbers)).toEqual([[1, 2, 3]]);
    h.submit(4);
    h.now += 10 * 60_000;
    h.apply({ type: 'tick' });
    expect(h.inProgress().map((r) => r.prNumbers)).toEqual([[1, 2, 3], [4]]);
  });

  it('keeps a noBatch PR alone', () => {
    const h = new Harness({ batch: true, batchingMinSize: 2, concurrency: 3 });
    h.submit(1, { noBatch: true });
    h.submit(2);
    h.submit(3);
    expect(h.inProgress().map((r) => r.prNumbers)).toEqual([[1], [2, 3]]);
  });

  it('bisects a failed batch to isolate the culprit; the others still land', () => {
    const h = new Harness({ batch: true, batchingMinSize: 4, concurrency: 1, bisectionConcurrency: 2 });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    h.finish(h.runOf(1).id, false);
    expect(h.state(1)).toBe('testing');
    expect(h.reason(1)).toBe('BISECTION_REQUIRED');
    expect(h.inProgress().map((r) => [r.prNumbers, r.isBisection])).toEqual([
      [[1, 2], true],
      [[3, 4], true],
    ]);
    h.settle(oracle(new Set([3])));
    expect(h.state(3)).toBe('failed');
    expect(h.target).toEqual([1, 2, 4]);
    expect(h.maxInFlight.bisection).toBeLessThanOrEqual(2);
  });

  it('bisects off the main line: the line goes on without the failed batch, a passing half goes back to it', () => {
    const h = new Harness({ batch: true, batchingMinSize: 2, concurrency: 2, bisectionConcurrency: 2 });
    for (let n = 1; n <= 6; n++) h.submit(n);
    expect(h.inProgress().map((r) => [r.prNumbers, r.basePrNumbers])).toEqual([
      [[1, 2], []],
      [
        [3, 4],
        [1, 2],
      ],
    ]);
    h.finish(h.runOf(1).id, false); // #2 is broken
    // The halves test on the bisection slots (the second on the first); the line restarts without them.
    expect(h.inProgress().map((r) => [r.prNumbers, r.basePrNumbers, r.isBisection])).toEqual([
      [[1], [], true],
      [[2], [1], true],
      [[3, 4], [], false],
      [[5, 6], [3, 4], false],
    ]);
    expect(h.reason(3)).toBe('PREREQUISITE_MERGE_ITEM_FAILED');
    // #1 passes while the line is busy: its commit would not stay the target's, so it goes back to the line.
    h.finish(h.runOf(1).id, true);
    expect([h.state(1), h.reason(1)]).toEqual(['pending', 'BISECTION_TEST_RUN_PASSED']);
    h.finish(h.runOf(2).id, false);
    expect([h.state(2), h.reason(2)]).toEqual(['failed', 'TEST_RUN_REQUIRED_STATUS_FAILED']);
    h.settle(oracle(new Set([2])));
    expect(h.target).toEqual([3, 4, 5, 6, 1]);
    for (const m of h.merges)
      expect({ passed: m.runPassed, tested: m.tested }).toEqual({ passed: true, tested: m.targetAfter });
  });

  it('a passing half lands at once when nothing landed since it started and the line is idle', () => {
    const h = new Harness({ batch: true, batchingMinSize: 4, concurrency: 1, bisectionConcurrency: 2 });
    for (const n of [1, 2, 3, 4]) h.submit(n);
    h.finish(h.runOf(1).id, false); // #4 is broken
    const half = h.runOf(1);
    h.finish(half.id, true);
    expect(h.merges.map((m) => [m.runId, m.prNumbers])).toEqual([[half.id, [1, 2]]]);
    // [3, 4] was tested on [1, 2], which has landed: it is judged on its own result.
    h.settle(oracle(new Set([4])));
    expect(h.target).toEqual([1, 2, 3]);
    expect(h.state(4)).toBe('failed');
  });

  it('a conflict in a PR a bisection half was built on sends the half back, it does not fail it', () => {
    const h = new Harness({ batch: true, batchingMinSize: 2, concurrency: 2, bisectionConcurrency: 2 });
    for (const n of [1, 2]) h.submit(n);
    h.finish(h.runOf(1).id, false);
    const second = h.runOf(2);
    expect(second.basePrNumbers).toEqual([1]);
    h.apply({
      type: 'testRunStartFailed',
      runId: second.id,
      reason: 'START_TEST_RUN_MERGE_CONFLICT',
      prNumber: 1,
    });
    expect(h.state(2)).toBe('testing');
    expect(h.runOf(2).id).not.toBe(second.id);
    expect(h.reason(2)).toBe('PREREQUISITE_MERGE_ITEM_FAILED');
  });

  it('with bisection_skip_redundant_tests never re-runs a combination already known to fail', () => {
    const run = (skip: boolean) => {
      const h = new Harness({
        batch: true,
        batchingMinSize: 4,
        bisectionConcurrency: 1,
        optimizationMode: skip ? 'bisection_skip_redundant_tests' : 'off',
      });
      for (const n of [1, 2, 3, 4]) h.submit(n);
      h.settle(oracle(new Set([4])));
      return h;
    };
    const plain = run(false);
    const skipping = run(true);
    expect(plain.target).toEqual([1, 2, 3]);
    expect(skipping.target).toEqual([1, 2, 3]);
    expect(skipping.reason(4)).toBe('TEST_RUN_FAILED_BY_OPTIMIZATION');
    const tested = (h: Harness) => h.effects.filter((e) => e.type === 'startTestRun').length;
    expect(tested(skipping)).toBeLessThan(tested(plain));
    // No combination (base + PRs) is started twice in the skipping run.
    const combos = skipping.model.runs
      .filter((r) => skipping.started.has(r.id))
      .map((r) => [...r.basePrNumbers, ...r.prNumbers].sort().join());
    expect(new Set(combos).size).toBe(combos.length);
  });
});

describe('optimistic merging and pending failure depth', () => {
  it('a passing successor clears a flaky failure and both land together', () => {
    const h = new Harness({ concurrency: 2, canOptimisticallyMerge: true, pendingFailureDepth: 1 });
    h.submit(1);
    h.submit(2);
    h.finish(h.runOf(1).id, false); // a flake
    expect(h.state(1)).toBe('pending_failure');
    h.finish(h.runOf(2).id, true);
    expect(h.state(1)).toBe('merged');
    expect(h.state(2)).toBe('merged');
    expect(h.merges).toEqual([expect.objectContaining({ prNumbers: [1, 2], runPassed: true })]);
  });

  it('optimistically lands the PRs ahead that are still testing', () => {
    const h = new Harness({ concurrency: 3, canOptimisticallyMerge: true });
    for (const n of [1, 2, 3]) h.submit(n);
    h.finish(h.runOf(3).id, true);
    expect(h.target).toEqual([1, 2, 3]);
    expect(h.cancelled.size).toBe(2);
  });

  it('without optimistic merging the failure is judged after the successors finish', () => {
    const h = new Harness({ concurrency: 2, pendingFailureDepth: 1 });
    h.submit(1);
    h.submit(2);
    h.finish(h.runOf(1).id, false);
    expect(h.state(1)).toBe('pending_failure');
    h.finish(h.runOf(2).id, true);
    expect(h.state(1)).toBe('failed');
    expect(h.state(2)).toBe('testing');
  });
});

describe('what a test commit is built on (basis)', () => {
  const basisOf = (h: Harness, runId: string) => {
    const effect = h.effects.find((e) => e.type === 'startTestRun' && e.runId === runId);
    return effect?.type === 'startTestRun' ? effect.basis : undefined;
  };

  it('builds each run on the test commit of the unit just ahead, and the first on the target', () => {
    const h = new Harness({ concurrency: 3 });
    for (const n of [1, 2, 3]) h.submit(n);
    expect(basisOf(h, h.runOf(1).id)).toEqual({ on: 'target' });
    expect(basisOf(h, h.runOf(2).id)).toEqual({ on: 'run', runId: h.runOf(1).id });
    expect(basisOf(h, h.runOf(3).id)).toEqual({ on: 'run', runId: h.runOf(2).id });
    // #1 lands, then #4 comes: it is built on the run of #3, which holds #2 and #3 on top of the target.
    h.finish(h.runOf(1).id, true);
    h.submit(4);
    expect(h.runOf(4).basePrNumbers).toEqual([2, 3]);
    expect(basisOf(h, h.runOf(4).id)).toEqual({ on: 'run', runId: h.runOf(3).id });
  });

  it('goes back to the target when the unit ahead does not hold exactly the base (parallel lanes joining)', () => {
    const h = new Harness({ concurrency: 5 }, 'parallel');
    h.submit(1, { targets: ['//a'] });
    h.submit(2, { targets: ['//b'] });
    h.submit(3, { targets: ['//a', '//b'] });
    expect(h.runOf(3).basePrNumbers).toEqual([1, 2]);
    // The run of #2 holds only #2 (another lane than #1): #3 is built on the target plus #1 and #2.
    expect(basisOf(h, h.runOf(2).id)).toEqual({ on: 'target' });
    expect(basisOf(h, h.runOf(3).id)).toEqual({ on: 'target' });
  });
});

describe('parallel mode', () => {
  it('tests and lands disjoint lanes independently; ALL depends on everything', () => {
    const h = new Harness({ concurrency: 5 }, 'parallel');
    h.submit(1, { targets: ['web'] });
    h.submit(2, { targets: ['api'] });
    h.submit(3, { targets: ['web'] });
    h.submit(4, { targets: 'ALL' });
    h.submit(5, { targets: [] });
    expect(h.runOf(2).basePrNumbers).toEqual([]);
    expect(h.runOf(3).basePrNumbers).toEqual([1]);
    expect(h.runOf(4).basePrNumbers).toEqual([1, 2, 3]);
    expect(h.runOf(5).basePrNumbers).toEqual([]);
    h.finish(h.runOf(2).id, true);
    expect(h.target).toEqual([2]); // nothing ahead in its lane
    h.finish(h.runOf(1).id, false);
    expect(h.state(1)).toBe('failed');
    expect(h.runOf(3).basePrNumbers).toEqual([]);
  });

  it('applies concurrency per lane: disjoint lanes test side by side, "ALL" joins them into one', () => {
    const h = new Harness({ concurrency: 1 }, 'parallel');
    h.submit(1, { targets: ['web'] });
    h.submit(2, { targets: ['api'] });
    h.submit(3, { targets: ['web'] });
    h.submit(4, { targets: [] });
    expect(h.inProgress().map((r) => r.prNumbers)).toEqual([[1], [2], [4]]);
    h.submit(5, { targets: 'ALL' }); // web and api are one lane now, with two runs in flight
    h.finish(h.runOf(1).id, true);
    expect(h.target).toEqual([1]);
    expect(h.inProgress().map((r) => r.prNumbers)).toEqual([[2], [4]]);
    h.finish(h.runOf(2).id, true);
    expect(h.inProgress().map((r) => r.prNumbers)).toEqual([[4], [3]]);
    h.settle(() => true);
    expect(h.target).toEqual([1, 2, 4, 3, 5]); // #4's lane finished first
    expect(h.maxInFlight.main).toBe(1);
  });

  it('a PR without impacted targets is not ready in parallel mode', () => {
    const h = new Harness({}, 'parallel');
    h.submit(1);
    expect(h.state(1)).toBe('not_ready');
  });
});
