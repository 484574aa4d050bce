/**
 * Whether a pull request waits on something only its author can fix (a push): a wait for it
 * (`mq status --wait`, `mq watch`, the Action's `wait`) stops there and says what, instead of
 * waiting out its timeout. Shared by the CLI and the Action (no oclif, no Node-only modules).
 */
import type { SubmittedPullRequest } from '../contract/index.js';

/**
 * What only the PR's author can fix, in one sentence, or null. Today: a PR waiting outside the
 * queue (`not_ready`) because it does not merge onto its base — the server's conflict sentence
 * (`conflicts with main in a.txt (…): rebase on main`) when the forge names the conflict. Reviews,
 * branch rules and the queue's own state are left alone: others release those, and the wait goes on.
 */
export function authorMustFix(pr: SubmittedPullRequest): string | null {
  if (pr.state !== 'not_ready' || pr.readiness?.gitHubMergeability !== 'not_mergeable') return null;
  return (
    pr.readiness.conflict?.message ??
    `conflicts with ${pr.prBaseBranch}: rebase or merge ${pr.prBaseBranch} into the branch`
  );
}
