/** A GitHub pull request as the queue reads it: PR facts from REST answers and webhook payloads. */
import type { Mergeability } from '../../contract/index.js';
import type { PrFacts } from '../../engine/types.js';
import type { ForgePrFacts } from '../types.js';
import { readFacts } from '../shared/polling.js';

/** The fields of a GitHub pull request (REST or webhook payload) the queue reads. */
export interface GitHubPull {
  number: number;
  title: string;
  state: string;
  merged?: boolean | null;
  /** The commit GitHub made when it merged the PR (the merge API checks it after a blip). */
  merge_commit_sha?: string | null;
  draft?: boolean | null;
  mergeable?: boolean | null;
  mergeable_state?: string | null;
  user?: { login: string } | null;
  head: { sha: string; ref: string };
  base: { ref: string };
  /** When GitHub last changed it: tells newer payloads from older ones (deliveries are not ordered). */
  updated_at?: string | null;
}

/** PR facts as the GitHub forge reports them: the engine's facts plus why a PR is not open. */
export interface GitHubPrFacts extends ForgePrFacts {
  draft?: boolean;
}

/**
 * `gitHubMergeability` from GitHub's `mergeable` / `mergeable_state` (docs/decisions.md "GitHub forge: PR facts and required statuses"):
 * GitHub computes it lazily, so `null` or `unknown` means "ask again" (`in_progress`); `dirty`
 * (conflicts) is `not_mergeable`; `clean`, `unstable`, `has_hooks`, `behind` (the queue tests on
 * the latest target anyway) and `blocked` are `mergeable` — a blocked PR waits through `blockedBy`
 * instead (protection.ts says what for). A draft PR is `unspecified`,
 * so it stays `not_ready` until it is marked ready for review.
 */
export function mergeabilityOf(
  pull: Pick<GitHubPull, 'mergeable' | 'mergeable_state' | 'draft'>,
): Mergeability {
  if (pull.draft) return 'unspecified';
  const state = pull.mergeable_state ?? 'unknown';
  if (state === 'draft') return 'unspecified';
  if (state === 'dirty' || pull.mergeable === false) return 'not_mergeable';
  if (pull.mergeable === null || pull.mergeable === undefined || state === 'unknown') return 'in_progress';
  return 'mergeable';
}

/** The queue's facts of a GitHub pull request. */
export function factsOf(pull: GitHubPull): GitHubPrFacts {
  const open = pull.state === 'open' && !pull.merged;
  const facts: GitHubPrFacts = {
    headSha: pull.head.sha,
    headBranch: pull.head.ref,
    title: pull.title,
    author: pull.user?.login ?? 'ghost',
    baseBranch: pull.base.ref,
    mergeability: mergeabilityOf(pull),
    open,
    draft: Boolean(pull.draft),
  };
  // GitHub says no more than that it conflicts: the sentence tells to rebase or merge the base in.
  if (open && facts.mergeability === 'not_mergeable') facts.conflict = {};
  if (!open) facts.closedAs = pull.merged ? 'merged' : 'closed';
  return facts;
}

/** The engine's part of the facts (what is stored with the entry). */
export function engineFacts(f: PrFacts): PrFacts {
  const { closedAs: _closedAs, ...facts } = readFacts(f);
  return facts;
}

/** The facts with what branch protection waits for (`blockedBy`, from protection.ts). */
export function withBlock(f: GitHubPrFacts, blockedBy: string | undefined): GitHubPrFacts {
  if (!blockedBy) return f;
  return { ...f, blockedBy };
}
