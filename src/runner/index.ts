/**
 * The check runner: runs the required checks of `railyard.json` against a test commit, each in a
 * temporary worktree and its own process group, with logs on disk. See run.ts for the contract.
 */
export { runChecks, resolveRequiredChecks, logFileNames } from './run.js';
export type { CheckOutcome, CheckResult, RunChecksOptions, RunChecksResult } from './run.js';
export { addTempWorktree } from './worktree.js';
export type { TempWorktree } from './worktree.js';
export { ChecksConfigError } from '../forge/git/errors.js';
