/**
 * The GitHub forge (decisions.md "GitHub forge"): REST v3 through Octokit, git over smart HTTP
 * into a bare cache per repository, test commits built by the git forge's code.
 */
export { GitHubClient, statusOf, type GitHubAuth, type GitHubClientOptions } from './client.js';
export { GitHubForge, mergeableUnknown, type GitHubForgeOptions, type RepoInfo } from './source.js';
export { createGitHubDriver, type GitHubSettings } from './driver.js';
export { factsOf, engineFacts, mergeabilityOf, type GitHubPull, type GitHubPrFacts } from './facts.js';
export type { ClosedAs } from '../types.js';
export {
  ciVerdict,
  QUEUE_STATUS_CONTEXT,
  type CiVerdict,
  type CheckRunLike,
  type StatusLike,
} from './checks.js';
export { authEnv, cacheDirFor, ensureCache, fetchRefs, pushRefs, remoteHeads } from './git.js';
