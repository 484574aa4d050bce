// The GitLab forge's reading of merge requests: detailed_merge_status → gitHubMergeability and what
// GitLab waits for; states, drafts and GitLab versions without detailed_merge_status.
import { describe, expect, it } from 'vitest';
import { factsOf, readinessOf, type GitLabMr } from '../../src/forge/gitlab/index.js';

const mr = (over: Partial<GitLabMr> = {}): GitLabMr => ({
  iid: 7,
  title: 'Add a thing',
  state: 'opened',
  draft: false,
  sha: 'a'.repeat(40),
  source_branch: 'feature',
  target_branch: 'main',
  author: { username: 'alice' },
  detailed_merge_status: 'mergeable',
  ...over,
});

describe('GitLab merge request facts', () => {
  it('maps detailed_merge_status: ask again, mergeable, conflict, waiting', () => {
    const cases: Array<[string, string, string | null]> = [
      ['unchecked', 'in_progress', null],
      ['checking', 'in_progress', null],
      ['preparing', 'in_progress', null],
      ['mergeable', 'mergeable', null],
      ['need_rebase', 'mergeable', null],
      ['conflict', 'not_mergeable', null],
      ['broken_status', 'not_mergeable', null],
      ['draft_status', 'unspecified', 'draft'],
      ['not_approved', 'mergeable', 'approvals'],
      ['discussions_not_resolved', 'mergeable', 'discussions'],
      ['ci_must_pass', 'mergeable', 'pipeline'],
      ['ci_still_running', 'mergeable', 'pipeline'],
      ['blocked_status', 'mergeable', 'blocked'],
      ['external_status_checks', 'mergeable', 'status_checks'],
      ['something_new', 'mergeable', 'other'],
    ];
    for (const [detailed, mergeability, block] of cases) {
      const r = readinessOf(mr({ detailed_merge_status: detailed }));
      expect([detailed, r.mergeability, r.block?.kind ?? null]).toEqual([detailed, mergeability, block]);
    }
    expect(readinessOf(mr({ detailed_merge_status: 'something_new' })).block?.detail).toBe(
      'GitLab reports the merge request as something_new',
    );
  });

  it('a draft waits whatever git says; older GitLab without detailed_merge_status is read from merge_status', () => {
    expect(readinessOf(mr({ draft: true })).mergeability).toBe('unspecified');
    expect(readinessOf(mr({ draft: undefined, work_in_progress: true })).block?.kind).toBe('draft');
    const old = (merge_status: string) => readinessOf(mr({ detailed_merge_status: undefined, merge_status }));
    expect(old('can_be_merged').mergeability).toBe('mergeable');
    expect(old('cannot_be_merged').mergeability).toBe('not_mergeable');
    expect(old('unchecked').mergeability).toBe('in_progress');
    expect(readinessOf(mr({ detailed_merge_status: null, merge_status: null })).mergeability).toBe(
      'in_progress',
    );
  });

  it('open, merged, closed and locked MRs', () => {
    const open = factsOf(mr());
    expect(open).toMatchObject({
      open: true,
      headSha: 'a'.repeat(40),
      headBranch: 'feature',
      baseBranch: 'main',
      author: 'alice',
      title: 'Add a thing',
      mergeability: 'mergeable',
      draft: false,
      block: null,
    });
    expect(open.closedAs).toBeUndefined();
    expect(factsOf(mr({ state: 'merged', detailed_merge_status: 'not_open' }))).toMatchObject({
      open: false,
      closedAs: 'merged',
    });
    expect(factsOf(mr({ state: 'closed', detailed_merge_status: 'not_open' }))).toMatchObject({
      open: false,
      closedAs: 'closed',
    });
    expect(factsOf(mr({ state: 'locked', detailed_merge_status: 'checking' }))).toMatchObject({
      open: true,
      mergeability: 'in_progress',
    });
    expect(factsOf(mr({ author: null })).author).toBe('ghost');
  });

  it('an MR GitLab holds carries blockedBy (the engine waits as for branch protection); a draft does not', () => {
    expect(factsOf(mr({ detailed_merge_status: 'not_approved' }))).toMatchObject({
      mergeability: 'mergeable',
      blockedBy: 'GitLab waits for the required approvals',
    });
    expect(factsOf(mr({ draft: true })).blockedBy).toBeUndefined();
    expect(factsOf(mr()).blockedBy).toBeUndefined();
  });
});
