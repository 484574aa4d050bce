import type { Repo } from '../contract/index.js';
import type { PrFacts } from '../engine/types.js';

/**
 * Where pull requests live. The server asks it for the facts of a PR on submit and refreshes
 * them when a PR is read. Implementations: the sandbox forge (./sandbox.ts) and the git forge
 * (./git/). Test-run and merge methods are added with the engine's effects.
 */
export interface Forge {
  /** Short name for logs and notes, e.g. `sandbox` or `git`. */
  readonly kind: string;
  /** The facts of PR `prNumber` of `repo` as seen by the queue of `queueBranch`; null when it does not exist. */
  getPullRequest(repo: Repo, prNumber: number, queueBranch: string): Promise<PrFacts | null>;
}
