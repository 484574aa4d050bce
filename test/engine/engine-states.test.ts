// The merge-queue engine's queue states and the outside events it meets, stepped through the test
// harness: paused, draining and switching modes, pushes to the target, refused and conflicting merges,
// timeouts and cancellations. The ways of testing and landing: engine.test.ts.
import { describe, expect, it } from 'vitest';
import { findEntry, readinessOf } from '../../src/engine/index.js';
import { facts, Harness } from './harness.js';

describe('queue states and outside events', () => {
  it('paused starts and merges nothing; resuming continues', () => {
    const h = new Harness({ concurrency: 2 });
    h.submit(1);
    h.apply({ type: 'updateConfig', patch: { state: 'paused' } });
    h.submit(2);
    expect(h.state(2)).toBe('pending');
    h.finish(h.runOf(1).id, true);
    expect(h.target).toEqual([]);
    expect(h.inProgress()).toHaveLength(0);
    h.apply({ type: 'updateConfig', patch: { state: 'running' } });
    expect(h.target).toEqual([1]);
    expect(h.state(2)).toBe('testing');
  });

  it('readiness says what a PR waits for: the PR itself, a paused queue, a draining queue', () => {
    const h = new Harness({}, 'parallel');
    const waits = (n: number) => readinessOf(h.model, findEntry(h.model, n)!).waitingFor;
    h.submit(1);
    expect(waits(1)).toEqual(['impacted_targets']);
    h.apply({
      type: 'impactedTargets',
      prNumber: 1,
      sha: findEntry(h.model, 1)!.pr.headSha,
      targets: ['//a'],
    });
    expect(h.state(1)).toBe('testing');
    expect(waits(1)).toEqual([]);
    h.apply({ type: 'updateConfig', patch: { state: 'paused' } });
    expect(waits(1)).toEqual(['queue_paused']); // a paused queue merges nothing either
    h.apply({ type: 'updateConfig', patch: { state: 'draining' } });
    expect(waits(1)).toEqual([]); // admitted: the drain finishes it
    h.submit(2, { targets: ['//b'] });
    expect(h.state(2)).toBe('not_ready');
    expect(waits(2)).toEqual(['queue_draining']);
    h.finish(h.runOf(1).id, true);
    expect(readinessOf(h.model, findEntry(h.model, 1)!).waitingFor).toBeUndefined(); // merged: it waits for nothing
  });

  it('draining finishes what is queued and admits nothing new', () => {
    const h = new Harness();
    h.submit(1);
    h.apply({ type: 'updateConfig', patch: { state: 'draining' } });
    h.submit(2);
    h.settle(() => true);
    expect(h.target).toEqual([1]);
    expect(h.state(2)).toBe('not_ready');
  });

  it('a mode switch waits in switching_modes until the queue is empty', () => {
    const h = new Harness();
    h.submit(1);
    h.apply({ type: 'updateConfig', patch: { mode: 'parallel' } });
    expect(h.model.config.state).toBe('switching_modes');
    expect(h.model.config.mode).toBe('single');
    h.settle(() => true);
    expect(h.model.config).toMatchObject({ state: 'running', mode: 'parallel' });
  });

  it('a push to the target outside the queue restarts every run', () => {
    const h = new Harness({ concurrency: 2 });
    h.submit(1);
    h.submit(2);
    const first = h.runOf(1).id;
    h.apply({ type: 'targetMoved' });
    expect([...h.cancelled]).toContain(first);
    expect(h.reason(1)).toBe('MANUAL_PUSH_TO_TARGET_BRANCH');
    expect(h.runOf(1).id).not.toBe(first);
    expect(h.effects.flatMap((e) => (e.type === 'stateChanged' ? [e.reason] : []))).toContain(
      'MANUAL_PUSH_TO_TARGET_BRANCH',
    );
  });

  it('a merge that finds the target moved restarts instead of landing', () => {
    const h = new Harness();
    h.autoMerge = false;
    h.submit(1);
    const run = h.runOf(1).id;
    h.finish(run, true);
    expect(h.effects.at(-1)).toEqual({ type: 'merge', runId: run, prNumbers: [1] });
    h.apply({ type: 'mergeFailed', runId: run, reason: 'target_moved' });
    expect(h.state(1)).toBe('testing');
    expect(h.runOf(1).id).not.toBe(run);
  });

  it('a merge a rule refuses fails the run once (never a loop of test runs), or pauses the queue and lands after resume', () => {
    const h = new Harness();
    h.autoMerge = false;
    h.submit(1);
    const run = h.runOf(1).id;
    h.finish(run, true);
    h.apply({
      type: 'mergeFailed',
      runId: run,
      reason: 'refused',
      detail: 'Required status check "scan" is expected.',
    });
    expect([h.state(1), h.reason(1)]).toEqual(['failed', 'GITHUB_API_MERGE_PR_FAILED']);
    expect(h.effects.filter((e) => e.type === 'startTestRun')).toHaveLength(1);

    const q = new Harness();
    q.autoMerge = false;
    q.submit(2);
    const second = q.runOf(2).id;
    q.finish(second, true);
    q.apply({
      type: 'mergeFailed',
      runId: second,
      reason: 'refused',
      detail: 'Changes must be made through a pull request.',
      pauseQueue: true,
    });
    expect(q.model.config.state).toBe('paused');
    expect(q.state(2)).toBe('tests_passed');
    const merges = () => q.effects.filter((e) => e.type === 'merge').length;
    expect(merges()).toBe(1);
    q.apply({ type: 'updateConfig', patch: { state: 'running' } });
    expect(merges()).toBe(2); // the passed run lands, not tested again
    expect(q.effects.filter((e) => e.type === 'startTestRun')).toHaveLength(1);
  });

  it('a push to the target while a merge is in flight leaves that merge to its outcome (it lands once)', () => {
    const h = new Harness({ concurrency: 2 });
    h.autoMerge = false;
    h.submit(1);
    h.submit(2);
    const run = h.runOf(1).id;
    const behind = h.runOf(2).id;
    h.finish(run, true);
    expect(h.effects.at(-1)).toEqual({ type: 'merge', runId: run, prNumbers: [1] });
    // Someone pushed on top of the landing before the server heard it succeed.
    h.apply({ type: 'targetMoved' });
    expect([...h.cancelled]).not.toContain(run);
    expect([...h.cancelled]).toContain(behind);
    expect(h.runOf(1).id).toBe(run);
    h.apply({ type: 'mergeSucceeded', runId: run });
    expect(h.state(1)).toBe('merged');
    const starts = h.effects.flatMap((e) =>
      e.type === 'startTestRun' ? [h.model.runs.find((r) => r.id === e.runId)!] : [],
    );
    expect(starts.filter((r) => r.prNumbers.includes(1))).toHaveLength(1); // #1 was never tested again
  });

  it('a push to the target while a merge is in flight, and the merge refused: everything restarts', () => {
    const h = new Harness();
    h.autoMerge = false;
    h.submit(1);
    const run = h.runOf(1).id;
    h.finish(run, true);
    h.apply({ type: 'targetMoved' });
    h.apply({ type: 'mergeFailed', runId: run, reason: 'target_moved' });
    expect(h.state(1)).toBe('testing');
    expect(h.runOf(1).id).not.toBe(run);
  });

  it('times out a run after testingTimeoutMinutes', () => {
    const h = new Harness({ testingTimeoutMinutes: 30 });
    h.submit(1);
    h.now += 30 * 60_000;
    h.apply({ type: 'tick' });
    expect(h.state(1)).toBe('failed');
    expect(h.reason(1)).toBe('TEST_RUN_TIMEOUT');
  });

  it('cancelling a PR of a batch retests the rest without it', () => {
    const h = new Harness({ batch: true, batchingMinSize: 2 });
    h.submit(1);
    h.submit(2);
    const batch = h.runOf(1).id;
    h.apply({ type: 'cancel', prNumber: 1, reason: 'USER_REQUESTED' });
    expect([...h.cancelled]).toContain(batch);
    expect(h.reason(2)).toBe('PREREQUISITE_MERGE_ITEM_CANCELLED');
  });

  it('a merge conflict fails only the conflicting PR of a batch', () => {
    const h = new Harness({ batch: true, batchingMinSize: 2 });
    h.submit(1);
    h.submit(2);
    h.apply({
      type: 'testRunStartFailed',
      runId: h.runOf(1).id,
      reason: 'START_TEST_RUN_MERGE_CONFLICT',
      prNumber: 2,
    });
    expect(h.state(2)).toBe('failed');
    expect(h.reason(2)).toBe('START_TEST_RUN_MERGE_CONFLICT');
    expect(h.runOf(1).prNumbers).toEqual([1]);
  });

  it('a push to a PR waiting on a conflict with its base checks it again; a push to any other PR cancels it', () => {
    const h = new Harness({ concurrency: 1 });
    h.submit(1);
    h.submit(2);
    const conflicting = { ...facts(2), mergeability: 'not_mergeable' as const, conflict: {} };
    h.apply({ type: 'prUpdated', prNumber: 2, pr: conflicting });
    expect(h.state(2)).toBe('not_ready');
    // The author merges main in: a new head that merges cleanly.
    const resolved = { ...facts(2), headSha: 'b'.repeat(40) };
    h.apply({ type: 'prUpdated', prNumber: 2, pr: resolved });
    expect(h.state(2)).toBe('pending');
    expect(findEntry(h.model, 2)!.pr.headSha).toBe('b'.repeat(40));
    // #1, testing, is pushed to: out of the queue.
    h.apply({ type: 'prUpdated', prNumber: 1, pr: { ...facts(1), headSha: 'c'.repeat(40) } });
    expect(h.state(1)).toBe('cancelled');
    expect(h.reason(1)).toBe('PR_PUSHED_TO');
  });
});
