/** The sandbox's source role: every PR exists, open and mergeable, with a head derived from its name. */
import { hash } from 'node:crypto';
import { REPO_NAMESPACE_MAX, REPO_OWNER_MAX, repoKey, type Repo } from '../../contract/index.js';
import type { PrFacts } from '../../engine/types.js';
import type { Source } from '../types.js';

/** The deterministic head SHA the sandbox gives PR `prNumber` of `repo` (40 hex digits). */
export function sandboxHeadSha(repo: Repo, prNumber: number): string {
  // One-shot hash: getSubmittedPullRequest asks the forge on every read.
  return hash(
    'sha1',
    `${repoKey(repo)}#${prNumber}`,
    'hex',
  );
}

/**
 * Simulated pull requests, for trying the API and for demos: every PR number exists, is open,
 * mergeable and based on the queue's branch, with a head SHA derived from repo and number.
 */
export class SandboxSource implements Source {
  /**
   * A sandbox stands in for any forge, so off github.com an owner may be a GitLab-style namespace
   * path (`group/subgroup`), as a GitLab pipeline trying Railyard out would name its project.
   */
  ownerMaxLength(host: string): number {
    return host.trim().toLowerCase() === 'github.com' ? REPO_OWNER_MAX : REPO_NAMESPACE_MAX;
  }

  async getPullRequest(repo: Repo, prNumber: number, queueBranch: string): Promise<PrFacts | null> {
    return {
      headSha: sandboxHeadSha(repo, prNumber),
      headBranch: `sandbox/pr-${prNumber}`,
      title: `Sandbox PR #${prNumber}`,
      author: 'sandbox',
      baseBranch: queueBranch,
      mergeability: 'mergeable',
      open: true,
    };
  }
}
