/**
 * The GitLab forge (docs/decisions.md): REST v4 through @gitbeaker/rest, git over smart HTTP,
 * merge requests mapped onto the v1 contract's pull requests. See README.md next to this file.
 */
export {
  GitLabClient,
  messageOf,
  retryAfterMs,
  statusOf,
  type GitLabApi,
  type GitLabClientOptions,
} from './client.js';
export {
  engineFacts,
  factsOf,
  readinessOf,
  type GitLabBlock,
  type GitLabMr,
  type GitLabPrFacts,
} from './facts.js';
export { authEnv, cacheDirFor, cloneUrlOf } from './git.js';
export { invalidGitLabRepo, NAMESPACE_MAX, projectPath, repoOfProject } from './repo.js';
export {
  HOOK_EVENTS,
  readHookHeaders,
  RecentDeliveries,
  tokenMatches,
  type HookDelivery,
  type HookEvent,
} from './deliveries.js';
