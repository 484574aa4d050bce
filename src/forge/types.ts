import type { Repo } from '../contract/index.js';
import type { PrFacts } from '../engine/types.js';

/**
 * Where an open pull request stands against the branch it would land in: `open` (there is
 * something to land), `merged` (the forge says so, or its changes are already in the target)
 * or `closed` (closed without merging).
 */
export type PrLandingState = { state: 'open' } | { state: 'merged' | 'closed'; detail: string };

/**
 * Where pull requests live. The server asks it for the facts of a PR on submit and refreshes
 * them when a PR is read. Implementations: the sandbox forge (./sandbox.ts) and the git forge
 * (./git/). Test-run and merge methods are added with the engine's effects.
 */
export interface Forge {
  /** Short name for logs and notes, e.g. `sandbox` or `git`. */
  readonly kind: string;
  /**
   * The longest `repo.owner` this forge has on `host` (decisions "Round 3"): unset means
   * REPO_OWNER_MAX (39, GitHub's); GitLab widens it to REPO_NAMESPACE_MAX (a namespace path).
   */
  ownerMaxLength?(host: string): number;
  /** The facts of PR `prNumber` of `repo` as seen by the queue of `queueBranch`; null when it does not exist. */
  getPullRequest(repo: Repo, prNumber: number, queueBranch: string): Promise<PrFacts | null>;
  /**
   * Whether the PR (whose current facts are `facts`) was merged or closed, as the forge knows it:
   * a forge that records merges (GitHub) reports `merged`/`closed`; the git forge reports `merged`
   * when the PR's head or its changes are already contained in `targetBranch`. Optional: without
   * it the server relies on `facts.open` and on the merges it made itself. The server refuses to
   * submit a PR that is not `open` (400 naming the state).
   */
  landingState?(repo: Repo, prNumber: number, facts: PrFacts, targetBranch: string): Promise<PrLandingState>;
}
