/** The reason codes of a PR's state (failed, cancelled, queued, passed, merged, submitted), as Trunk's contract names them. */
export const FAILURE_REASONS = [
  'START_TEST_RUN_INVALID_EVENT',
  'START_TEST_RUN_MERGE_CONFLICT',
  'START_TEST_RUN_CONFIG_NOT_FOUND',
  'START_TEST_RUN_CONFIG_PARSING_FAILURE',
  'START_TEST_RUN_CONFIG_MISSING_REQUIRED_STATUSES',
  'START_TEST_RUN_CONFIG_BAD_REQUIRED_STATUSES',
  'START_TEST_RUN_CONFIG_BAD_VERSION',
  'START_TEST_RUN_NO_REQUIRED_STATUSES',
  'TEST_RUN_REQUIRED_STATUS_FAILED',
  'TEST_RUN_TIMEOUT',
  'GITHUB_API_MERGE_PR_FAILED',
  'GITHUB_API_DIRECT_MERGE_PR_FAILED',
  'PR_UPDATED_AT_MERGE_TIME',
  'START_TEST_RUN_RETRY_EXHAUSTED',
  'START_TEST_RUN_DRAFT_PRS_NOT_ALLOWED',
  'TEST_RUN_FAILED_BY_OPTIMIZATION',
  /** Railyard (GitHub forge): no CI reported any check on the test commit within the grace period. */
  'TEST_RUN_NO_CHECKS_REPORTED',
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

export const CANCELLATION_REASONS = [
  'USER_REQUESTED',
  'PR_CLOSED',
  'PR_PUSHED_TO',
  'PR_BASE_BRANCH_CHANGED',
  'TRUNK_ADMIN_REQUESTED',
  'PR_CONVERTED_TO_DRAFT',
  'STACKED_PR_MEMBER_PUSHED_TO',
  'STACKED_PR_MEMBER_CLOSED',
  'STACKED_PR_MEMBER_MERGED',
  'STACKED_PR_MEMBER_BASE_BRANCH_CHANGED',
] as const;
export type CancellationReason = (typeof CANCELLATION_REASONS)[number];

export const QUEUED_REASONS = [
  'MANUAL_PUSH_TO_TARGET_BRANCH',
  'PREREQUISITE_MERGE_ITEM_CANCELLED',
  'PREREQUISITE_MERGE_ITEM_FAILED',
  'PREREQUISITE_MERGE_ITEM_MANUALLY_MERGED',
  'MERGE_ITEM_NOW_READY',
  'TESTS_RESTARTED_BY_USER',
  'TESTS_RESTARTED_BY_API_REQUEST',
  'SKIP_THE_LINE_INTERRUPTED',
  'BISECTION_REQUIRED',
  'BISECTION_TEST_RUN_PASSED',
  /** Railyard: its run failed only on tests with flake history; the same commit is tested again (flakyRetries). */
  'FLAKY_FAILURE_RETRIED',
  /** Railyard: its riskEstimate is above probationThreshold; it is tested alone, off the line, first. */
  'PROBATION_REQUIRED',
  /** Railyard: it passed its probation run and joins the line. */
  'PROBATION_PASSED',
] as const;
export type QueuedReason = (typeof QUEUED_REASONS)[number];

/** Railyard: why a run counts as passed although a check failed (flakyPolicy); the history names the tests. */
export const PASSED_REASONS = ['FLAKY_FAILURES_IGNORED'] as const;
export type PassedReason = (typeof PASSED_REASONS)[number];

export const MERGED_REASONS = ['MERGE_GRAPH_MERGE', 'MANUAL_MERGE', 'MERGE_GRAPH_DIRECT_MERGE'] as const;
export type MergedReason = (typeof MERGED_REASONS)[number];

/** Submission reasons (webhook `submitted_reason`) used as the reason code of a fresh entry. */
export const SUBMITTED_REASONS = ['USER_REQUESTED', 'TRUNK_ADMIN_REQUESTED', 'API_REQUESTED'] as const;
