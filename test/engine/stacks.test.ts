import { describe, expect, it } from 'vitest';
import { readinessOf, findEntry, stackOf, stackSentence } from '../../src/engine/index.js';
import { facts, Harness, oracle } from './harness.js';

/** Submits a stack of PRs, bottom first: `prs[0]` on main, each next one on the one before. */
function submitStack(h: Harness, prs: number[], options: { targets?: string[] } = {}): void {
  prs.forEach((pr, i) => h.submit(pr, { ...options, ...(i > 0 ? { stackedOn: prs[i - 1] } : {}) }));
}

describe('stacked PRs', () => {
  it('tests a stack as one unit, bottom first, and lands it in one merge', () => {
    const h = new Harness({ concurrency: 3 });
    h.submit(1);
    submitStack(h, [4, 5, 6]);
    h.submit(7);
    expect(h.inProgress().map((r) => [r.prNumbers, r.basePrNumbers])).toEqual([
      [[1], []],
      [[4, 5, 6], [1]],
      [[7], [1, 4, 5, 6]],
    ]);
    h.settle(() => true);
    expect(h.target).toEqual([1, 4, 5, 6, 7]);
    expect(h.merges.map((m) => m.prNumbers)).toEqual([[1], [4, 5, 6], [7]]);
    expect(h.partlyLanded).toEqual([]);
  });

  it('a stacked PR targets the queue through the bottom of its stack; alone it waits for its base', () => {
    const h = new Harness();
    h.submit(5, { stackedOn: 4 }); // #4 is not in the queue
    expect(h.state(5)).toBe('not_ready');
    expect(readinessOf(h.model, findEntry(h.model, 5)!).doesBaseBranchMatch).toBe(false);
    h.submit(4);
    expect(h.runOf(4).prNumbers).toEqual([4, 5]);
    expect(readinessOf(h.model, findEntry(h.model, 5)!).doesBaseBranchMatch).toBe(true);
  });

  it('a stack is admitted whole: one PR of it not mergeable holds all of it', () => {
    const h = new Harness();
    h.apply({ type: 'submit', prNumber: 5, pr: { ...facts(5, 'main', 4), mergeability: 'not_mergeable' } });
    h.submit(4);
    expect([h.state(4), h.state(5)]).toEqual(['not_ready', 'not_ready']);
    h.apply({ type: 'prUpdated', prNumber: 5, pr: facts(5, 'main', 4) });
    expect(h.runOf(5).prNumbers).toEqual([4, 5]);
  });

  it('a failing stack fails whole: never a part of it lands', () => {
    const h = new Harness({ concurrency: 2 });
    submitStack(h, [4, 5, 6]);
    h.submit(7);
    h.settle(oracle(new Set([5])));
    expect([4, 5, 6].map((pr) => h.state(pr))).toEqual(['failed', 'failed', 'failed']);
    expect(h.target).toEqual([7]);
  });

  it('bisection splits a failed batch between stacks, never inside one', () => {
    const h = new Harness({ batch: true, batchingMinSize: 4, concurrency: 1 });
    h.submit(1);
    submitStack(h, [4, 5]);
    h.submit(7);
    expect(h.runOf(1).prNumbers).toEqual([1, 4, 5, 7]);
    h.settle(oracle(new Set([7])));
    expect(h.target).toEqual([1, 4, 5]);
    expect(h.state(7)).toBe('failed');
    for (const run of h.model.runs) {
      const has = [4, 5].filter((pr) => run.prNumbers.includes(pr));
      expect(has.length === 0 || has.length === 2, `run ${run.prNumbers.join(',')}`).toBe(true);
    }
    expect(h.partlyLanded).toEqual([]);
  });

  it.each([
    ['pushed to', { headSha: 'f'.repeat(40) }, 'PR_PUSHED_TO', 'STACKED_PR_MEMBER_PUSHED_TO'],
    ['closed', { open: false }, 'PR_CLOSED', 'STACKED_PR_MEMBER_CLOSED'],
    ['merged outside the queue', { open: false, merged: true }, 'PR_CLOSED', 'STACKED_PR_MEMBER_MERGED'],
    [
      'retargeted',
      { baseBranch: 'release' },
      'PR_BASE_BRANCH_CHANGED',
      'STACKED_PR_MEMBER_BASE_BRANCH_CHANGED',
    ],
  ] as const)(
    'a member %s removes the PRs above it; those below stay, tested again alone',
    (_what, change, own, above) => {
      const h = new Harness({ concurrency: 2 });
      submitStack(h, [4, 5, 6]);
      const first = h.runOf(4).id;
      h.apply({ type: 'prUpdated', prNumber: 5, pr: { ...facts(5, 'main', 4), ...change } });
      expect([h.state(5), h.reason(5)]).toEqual(['cancelled', own]);
      expect([h.state(6), h.reason(6)]).toEqual(['cancelled', above]);
      expect(h.run(first).status).toBe('cancelled');
      expect(h.runOf(4).prNumbers).toEqual([4]);
      h.settle(() => true);
      expect(h.target).toEqual([4]);
    },
  );

  it('the forge no longer naming the closed PR below keeps the link: the PR above leaves with it', () => {
    const h = new Harness();
    submitStack(h, [4, 5]);
    // GitHub/GitLab: with #4 closed, no open PR has #5's base as its head any more.
    h.apply({ type: 'prUpdated', prNumber: 5, pr: { ...facts(5, 'main', 4), stackedOn: undefined } });
    h.apply({ type: 'prUpdated', prNumber: 4, pr: { ...facts(4), open: false } });
    expect([h.state(5), h.reason(5)]).toEqual(['cancelled', 'STACKED_PR_MEMBER_CLOSED']);
  });

  it('a PR submitted on top of a stack under test joins it: the stack is tested again whole', () => {
    const h = new Harness();
    submitStack(h, [4, 5]);
    const first = h.runOf(4).id;
    h.submit(6, { stackedOn: 5 });
    expect(h.run(first).status).toBe('cancelled');
    expect(h.runOf(6).prNumbers).toEqual([4, 5, 6]);
    h.settle(() => true);
    expect(h.merges.map((m) => m.prNumbers)).toEqual([[4, 5, 6]]);
  });

  it('cancelling the bottom of a stack cancels the whole stack', () => {
    const h = new Harness();
    submitStack(h, [4, 5, 6]);
    h.apply({ type: 'cancel', prNumber: 4, reason: 'USER_REQUESTED' });
    expect([4, 5, 6].map((pr) => [h.state(pr), h.reason(pr)])).toEqual([
      ['cancelled', 'USER_REQUESTED'],
      ['cancelled', 'USER_REQUESTED'],
      ['cancelled', 'USER_REQUESTED'],
    ]);
    expect(h.inProgress()).toEqual([]);
  });

  it('a stack is never put on probation piece by piece', () => {
    const h = new Harness({ probationThreshold: 0.3 });
    h.submit(4, { riskEstimate: 0.9 });
    h.submit(5, { stackedOn: 4 });
    h.settle(() => true);
    expect(h.merges.map((m) => m.prNumbers)).toEqual([[4, 5]]);
    expect(h.model.runs.filter((r) => r.isProbation && r.status !== 'cancelled')).toEqual([]);
  });

  it('names a stack for people, bottom first, in the queue and once landed', () => {
    const h = new Harness({ concurrency: 2 });
    submitStack(h, [4, 5, 6]);
    h.submit(7);
    expect(stackOf(h.model, findEntry(h.model, 5)!)).toEqual([4, 5, 6]);
    expect(stackOf(h.model, findEntry(h.model, 7)!)).toEqual([]);
    h.settle(() => true);
    expect(stackOf(h.model, findEntry(h.model, 4)!)).toEqual([4, 5, 6]);
    expect(stackSentence([4, 5, 6])).toBe('stack of 3: #4 ← #5 ← #6');
    expect(stackSentence([1, 2], (n) => `!${n}`)).toBe('stack of 2: !1 ← !2');
  });

  it('parallel mode: a stack is one lane even when its PRs touch different targets', () => {
    const h = new Harness({ concurrency: 1 }, 'parallel');
    h.submit(4, { targets: ['a'] });
    h.submit(5, { targets: ['b'], stackedOn: 4 });
    h.submit(6, { targets: ['b'] });
    expect(h.inProgress().map((r) => [r.prNumbers, r.basePrNumbers])).toEqual([[[4, 5], []]]);
    h.settle(() => true);
    expect(h.target).toEqual([4, 5, 6]);
  });
});
