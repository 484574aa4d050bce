/**
 * GitLab merge request → Railyard PR facts (docs/decisions.md, GitLab forge): state, draft,
 * and `detailed_merge_status` → `gitHubMergeability` plus, when GitLab holds an MR git could merge,
 * what it waits for (approvals, discussions, the MR's pipeline, another MR or check): `block`, and
 * `blockedBy` for the engine — the MR waits as `branch_protection` does on GitHub.
 */
import type { Mergeability } from '../../contract/index.js';
import type { PrFacts } from '../../engine/types.js';
import type { ForgePrFacts } from '../types.js';
import { readFacts } from '../shared/polling.js';

/** The fields of a GitLab merge request (REST answer or hook payload) the queue reads. */
export interface GitLabMr {
  iid: number;
  title: string;
  /** `opened`, `closed`, `merged` or `locked`. */
  state: string;
  draft?: boolean | null;
  work_in_progress?: boolean | null;
  sha: string | null;
  source_branch: string;
  target_branch: string;
  source_project_id?: number;
  target_project_id?: number;
  author?: { username: string } | null;
  detailed_merge_status?: string | null;
  /** Deprecated by GitLab but still sent; read when `detailed_merge_status` is missing (older instances). */
  merge_status?: string | null;
  has_conflicts?: boolean | null;
}

/** Why GitLab holds back an MR that git could merge: shown in the MR's note and `mq status`. */
export type GitLabBlock =
  | 'draft'
  | 'approvals'
  | 'discussions'
  | 'pipeline'
  | 'status_checks'
  | 'blocked'
  | 'other';

/** PR facts as the GitLab forge reports them: the engine's facts plus why a PR is not open or not ready. */
export interface GitLabPrFacts extends ForgePrFacts {
  draft: boolean;
  /** What GitLab waits for besides git (null: nothing, or only a conflict / a check in progress). */
  block: { kind: GitLabBlock; detail: string } | null;
  sourceProjectId?: number;
  targetProjectId?: number;
}

/** `detailed_merge_status` values that mean "GitLab has not decided yet: ask again". */
const IN_PROGRESS = new Set([
  'unchecked',
  'checking',
  'preparing',
  'approvals_syncing',
  'cannot_be_merged_recheck',
]);

/** Values that hold an MR back for a reason other than git, in GitLab's words → ours. */
const BLOCKS: Record<string, { kind: GitLabBlock; detail: string }> = {
  not_approved: { kind: 'approvals', detail: 'GitLab waits for the required approvals' },
  requested_changes: { kind: 'approvals', detail: 'a reviewer requested changes' },
  discussions_not_resolved: { kind: 'discussions', detail: 'GitLab waits for its threads to be resolved' },
  ci_must_pass: { kind: 'pipeline', detail: "GitLab waits for the merge request's pipeline to pass" },
  ci_still_running: { kind: 'pipeline', detail: "GitLab waits for the merge request's pipeline to finish" },
  external_status_checks: {
    kind: 'status_checks',
    detail: 'GitLab waits for its external status checks to pass',
  },
  blocked_status: { kind: 'blocked', detail: 'the merge request is blocked by another merge request' },
  merge_request_blocked: { kind: 'blocked', detail: 'the merge request is blocked by another merge request' },
  jira_association_missing: { kind: 'other', detail: 'GitLab waits for a Jira issue to be linked' },
  security_policy_violations: { kind: 'other', detail: 'a security policy blocks the merge request' },
  policies_denied: { kind: 'other', detail: 'a security policy blocks the merge request' },
  locked_paths: { kind: 'other', detail: 'the merge request changes locked paths' },
  locked_lfs_files: { kind: 'other', detail: 'the merge request changes locked LFS files' },
  title_regex: { kind: 'other', detail: "the merge request's title does not match the project's rule" },
  merge_time: { kind: 'other', detail: 'the merge request may not be merged before its merge-after time' },
  commits_status: { kind: 'other', detail: "GitLab's commit checks fail on the merge request" },
};

/** The merge-readiness of an open MR: `gitHubMergeability` and what GitLab waits for. */
export function readinessOf(
  mr: Pick<
    GitLabMr,
    'draft' | 'work_in_progress' | 'detailed_merge_status' | 'merge_status' | 'has_conflicts'
  >,
): {
  mergeability: Mergeability;
  block: GitLabPrFacts['block'];
} {
  const draft = Boolean(mr.draft ?? mr.work_in_progress);
  const detailed = mr.detailed_merge_status ?? legacyStatus(mr.merge_status);
  if (draft || detailed === 'draft_status')
    return { mergeability: 'unspecified', block: { kind: 'draft', detail: 'the merge request is a draft' } };
  if (detailed === null || IN_PROGRESS.has(detailed)) return { mergeability: 'in_progress', block: null };
  if (detailed === 'conflict' || detailed === 'broken_status' || mr.has_conflicts === true)
    return { mergeability: 'not_mergeable', block: null };
  // The queue tests on the latest target anyway: a branch that only needs a rebase is fine.
  if (detailed === 'mergeable' || detailed === 'need_rebase')
    return { mergeability: 'mergeable', block: null };
  if (detailed === 'not_open') return { mergeability: 'unspecified', block: null };
  // Git could merge it, GitLab holds it (approvals, threads, a pipeline, another MR…): it waits as
  // GitHub's branch protection does (readiness.waitingFor `branch_protection`, blockedBy says why).
  return {
    mergeability: 'mergeable',
    block: BLOCKS[detailed] ?? { kind: 'other', detail: `GitLab reports the merge request as ${detailed}` },
  };
}

/** `merge_status` of GitLab versions before `detailed_merge_status` (14.x and older). */
function legacyStatus(status: string | null | undefined): string | null {
  switch (status) {
    case 'can_be_merged':
      return 'mergeable';
    case 'cannot_be_merged':
      return 'conflict';
    case 'unchecked':
    case 'checking':
    case 'cannot_be_merged_recheck':
      return 'checking';
    default:
      return null;
  }
}

/** The queue's facts of a GitLab merge request. */
export function factsOf(mr: GitLabMr): GitLabPrFacts {
  // `locked` is GitLab's short-lived state while it merges: still open for the queue.
  const open = mr.state === 'opened' || mr.state === 'locked';
  const { mergeability, block } = open
    ? readinessOf(mr)
    : { mergeability: 'unspecified' as const, block: null };
  const facts: GitLabPrFacts = {
    headSha: mr.sha ?? '',
    headBranch: mr.source_branch,
    title: mr.title,
    author: mr.author?.username ?? 'ghost',
    baseBranch: mr.target_branch,
    mergeability,
    open,
    draft: Boolean(mr.draft ?? mr.work_in_progress),
    block,
  };
  if (mr.source_project_id !== undefined) facts.sourceProjectId = mr.source_project_id;
  if (mr.target_project_id !== undefined) facts.targetProjectId = mr.target_project_id;
  if (open && mergeability === 'not_mergeable' && (mr.has_conflicts === true || (mr.detailed_merge_status ?? legacyStatus(mr.merge_status)) === 'conflict'))
    facts.conflict = {};
  if (!open) facts.closedAs = mr.state === 'merged' ? 'merged' : 'closed';
  return withBlockedBy(facts);
}

/**
 * `blockedBy` (what the engine and `mq status` show) from what GitLab waits for; a draft is not a
 * block of the branch's rules (the engine knows drafts by their mergeability).
 */
export function withBlockedBy(f: GitLabPrFacts): GitLabPrFacts {
  const { blockedBy: _old, ...rest } = f;
  return f.block && f.block.kind !== 'draft' ? { ...rest, blockedBy: f.block.detail } : rest;
}

/** The engine's part of the facts (what is stored with the entry). */
export function engineFacts(f: PrFacts): PrFacts {
  const { closedAs: _closedAs, ...facts } = readFacts(f);
  return facts;
}
