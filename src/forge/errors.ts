/**
 * Why a test run could not start, in terms every forge shares: the server reports these as the
 * run's start failure (the failure reason of its PRs).
 */

export { ChecksConfigError } from '../checks/config.js';

/** A pull request of a test commit does not apply on top of what comes before it. */
export class MergeConflictError extends Error {
  readonly reason = 'START_TEST_RUN_MERGE_CONFLICT' as const;
  constructor(
    /** The PR whose changes conflict (the first one in queue order that does not apply). */
    readonly prNumber: number,
    /** Conflicting paths, as git reports them. */
    readonly files: readonly string[],
    message: string,
  ) {
    super(message);
    this.name = 'MergeConflictError';
  }
}
