/**
 * Why a test run could not start, in terms every forge shares: the server reports these as the
 * run's start failure (the failure reason of its PRs).
 */
import type { FailureReason } from '../contract/index.js';

/**
 * A test run cannot start because of the repository's check configuration.
 * `reason` is the failure reason the queue records for the run's PRs.
 */
export class ChecksConfigError extends Error {
  constructor(
    readonly reason: Extract<
      FailureReason,
      | 'START_TEST_RUN_CONFIG_NOT_FOUND'
      | 'START_TEST_RUN_CONFIG_PARSING_FAILURE'
      | 'START_TEST_RUN_NO_REQUIRED_STATUSES'
      | 'START_TEST_RUN_CONFIG_MISSING_REQUIRED_STATUSES'
    >,
    message: string,
    /** For MISSING_REQUIRED_STATUSES: the required statuses that have no check. */
    readonly missing: readonly string[] = [],
  ) {
    super(message);
    this.name = 'ChecksConfigError';
  }
}

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
