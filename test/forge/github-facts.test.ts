import { describe, expect, it } from 'vitest';
import { ciVerdict, factsOf, mergeabilityOf, type GitHubPull } from '../../src/forge/github/index.js';

const pull = (over: Partial<GitHubPull> = {}): GitHubPull => ({
  number: 7,
  title: 'Add search',
  state: 'open',
  merged: false,
  draft: false,
  mergeable: true,
  mergeable_state: 'clean',
  user: { login: 'alice' },
  head: { sha: 'a'.repeat(40), ref: 'feature/search' },
  base: { ref: 'main' },
  ...over,
});

describe('GitHub PR facts', () => {
  it('maps mergeable / mergeable_state as decisions.md says', () => {
    expect(mergeabilityOf({ mergeable: null, mergeable_state: 'unknown' })).toBe('in_progress');
    expect(mergeabilityOf({ mergeable: true, mergeable_state: 'unknown' })).toBe('in_progress');
    expect(mergeabilityOf({ mergeable: false, mergeable_state: 'dirty' })).toBe('not_mergeable');
    for (const s of ['clean', 'unstable', 'has_hooks', 'blocked', 'behind'])
      expect(mergeabilityOf({ mergeable: true, mergeable_state: s })).toBe('mergeable');
    // A draft stays out of the queue whatever GitHub computed.
    expect(mergeabilityOf({ mergeable: true, mergeable_state: 'clean', draft: true })).toBe('unspecified');
  });

  it('reads title, author, head, base and open/closed/merged', () => {
    expect(factsOf(pull())).toMatchObject({
      headSha: 'a'.repeat(40),
      headBranch: 'feature/search',
      title: 'Add search',
      author: 'alice',
      baseBranch: 'main',
      mergeability: 'mergeable',
      open: true,
    });
    expect(factsOf(pull({ state: 'closed', merged: true }))).toMatchObject({
      open: false,
      closedAs: 'merged',
    });
    expect(factsOf(pull({ state: 'closed' }))).toMatchObject({ open: false, closedAs: 'closed' });
  });
});

describe('CI verdict on a test commit', () => {
  const run = (id: number, name: string, conclusion: string | null) => ({
    id,
    name,
    status: conclusion ? 'completed' : 'in_progress',
    conclusion,
  });
  it('without requiredStatuses: every reported check must succeed, ours does not count, none is pending', () => {
    expect(ciVerdict([], [], null)).toMatchObject({ state: 'pending', anyReported: false });
    expect(ciVerdict([], [{ context: 'railyard/merge-queue', state: 'pending' }], null)).toMatchObject({
      state: 'pending',
      anyReported: false,
    });
    expect(ciVerdict([run(1, 'build', 'success')], [{ context: 'lint', state: 'pending' }], null).state).toBe(
      'pending',
    );
    expect(ciVerdict([run(1, 'build', 'success')], [{ context: 'lint', state: 'success' }], null).state).toBe(
      'passed',
    );
    expect(ciVerdict([run(1, 'build', 'failure'), run(2, 'test', 'success')], [], null)).toMatchObject({
      state: 'failed',
      checks: { build: 'failure', test: 'success' },
    });
    expect(ciVerdict([run(1, 'build', 'skipped'), run(2, 'test', 'neutral')], [], null).state).toBe('passed');
  });
  it('a failed check re-run green counts (latest run per name wins)', () => {
    expect(ciVerdict([run(1, 'build', 'failure'), run(5, 'build', 'success')], [], null).state).toBe(
      'passed',
    );
    expect(ciVerdict([run(5, 'build', 'success'), run(1, 'build', 'failure')], [], null).state).toBe(
      'passed',
    );
    expect(ciVerdict([run(1, 'build', 'failure'), run(5, 'build', null)], [], null).state).toBe('pending');
  });
  it('with requiredStatuses: only those count, and each must be reported', () => {
    expect(ciVerdict([run(1, 'build', 'success'), run(2, 'flaky', 'failure')], [], ['build']).state).toBe(
      'passed',
    );
    expect(ciVerdict([run(1, 'build', 'success')], [], ['build', 'deploy']).state).toBe('pending');
    expect(
      ciVerdict([run(1, 'build', 'success')], [{ context: 'deploy', state: 'error' }], ['build', 'deploy'])
        .state,
    ).toBe('failed');
  });
});
