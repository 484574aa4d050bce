/**
 * The git forge: bare repositories on disk, driven through the `git` CLI (≥ 2.38).
 * See README.md in this folder for the repository layout and how a PR's base is set.
 */
export { git, gitEnv, setGitConcurrency, withRepoLock, GitError, RAILYARD_IDENTITY } from '../../git/exec.js';
export type { GitOptions, GitResult } from '../../git/exec.js';
export { ChecksConfigError, MergeConflictError, NotFastForwardError } from './errors.js';
export { filesChangedOnTarget } from './changed.js';
export { describeConflict } from './conflict.js';
export {
  CHECKS_CONFIG_FILE,
  TEST_BRANCH_PREFIX,
  casUpdateBranch,
  commitIdent,
  containedIn,
  deleteBranches,
  diffSnapshots,
  getPullRequest,
  headOf,
  isAncestor,
  listTestBranches,
  maintainRepo,
  mergeabilityOf,
  mergeTrees,
  parseChecksConfig,
  prBaseConfigKey,
  pruneTestBranches,
  readChecksConfig,
  RUNNER_ENV,
  repoDirFor,
  snapshot,
  testBranchName,
  watchRepo,
} from './repo.js';
export type {
  ChecksConfig,
  PullRefState,
  RepoChange,
  RepoSnapshot,
  TestBranch,
  TreeMerge,
  WatchOptions,
} from './repo.js';
export { buildRunCommit, buildTestCommit, planTestCommit, unitOf } from './build.js';
export { repoPlaceProblem } from './place.js';
export { GitForge } from './source.js';
export { createGitDriver, type GitDriverOptions } from './driver.js';
export type { BuildTestCommitInput, BuiltTestCommit, TestUnit } from './build.js';
