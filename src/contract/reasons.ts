/**
 * Plain-language sentences for the reason codes of the v1 contract (src/contract/reason-codes.ts), shared by the
 * demo's summary and the web dashboard. Dependency-free (no zod): the dashboard bundles it.
 * Each completes "PR #n failed because …" / "… was cancelled because …".
 */
const SENTENCES: Record<string, string> = {
  // Failures
  TEST_RUN_REQUIRED_STATUS_FAILED: 'its check failed',
  START_TEST_RUN_MERGE_CONFLICT: 'it conflicts with a PR that landed first',
  TEST_RUN_TIMEOUT: 'its test run timed out',
  START_TEST_RUN_INVALID_EVENT: 'the test run could not be started (invalid event)',
  START_TEST_RUN_CONFIG_NOT_FOUND: 'the repository has no merge queue configuration',
  START_TEST_RUN_CONFIG_PARSING_FAILURE: 'the merge queue configuration could not be read',
  START_TEST_RUN_CONFIG_MISSING_REQUIRED_STATUSES: 'a required check has no check in the configuration',
  START_TEST_RUN_CONFIG_BAD_REQUIRED_STATUSES: 'the configuration lists required checks that are not valid',
  START_TEST_RUN_CONFIG_BAD_VERSION: 'the configuration has a version this server does not read',
  START_TEST_RUN_NO_REQUIRED_STATUSES: 'no required checks are defined, so nothing could test it',
  GITHUB_API_MERGE_PR_FAILED: 'the forge refused the merge',
  GITHUB_API_DIRECT_MERGE_PR_FAILED: 'the forge refused the direct merge',
  PR_UPDATED_AT_MERGE_TIME: 'it was pushed to while being merged',
  START_TEST_RUN_RETRY_EXHAUSTED: 'its test run could not be started after several attempts',
  START_TEST_RUN_DRAFT_PRS_NOT_ALLOWED: 'it is a draft, and drafts may not enter the queue',
  TEST_RUN_FAILED_BY_OPTIMIZATION: 'a test of the same change already failed, so it was not run again',
  // Cancellations
  USER_REQUESTED: 'someone asked for it',
  TRUNK_ADMIN_REQUESTED: 'an administrator asked for it',
  API_REQUESTED: 'an API client asked for it',
  PR_CLOSED: 'the pull request was closed',
  PR_PUSHED_TO: 'new commits were pushed to it',
  PR_BASE_BRANCH_CHANGED: 'its base branch changed',
  PR_CONVERTED_TO_DRAFT: 'it was turned into a draft',
  STACKED_PR_MEMBER_PUSHED_TO: 'a PR of its stack was pushed to',
  STACKED_PR_MEMBER_CLOSED: 'a PR of its stack was closed',
  STACKED_PR_MEMBER_MERGED: 'a PR of its stack was merged',
  STACKED_PR_MEMBER_BASE_BRANCH_CHANGED: 'the base branch of a PR of its stack changed',
  // Back to the queue
  MANUAL_PUSH_TO_TARGET_BRANCH: 'someone pushed to the target branch, so its tests restarted',
  PREREQUISITE_MERGE_ITEM_CANCELLED: 'a PR it was tested on was cancelled',
  PREREQUISITE_MERGE_ITEM_FAILED: 'a PR it was tested on failed',
  PREREQUISITE_MERGE_ITEM_MANUALLY_MERGED: 'a PR it was tested on was merged by hand',
  MERGE_ITEM_NOW_READY: 'it became ready to enter the queue',
  TESTS_RESTARTED_BY_USER: 'someone restarted its tests',
  TESTS_RESTARTED_BY_API_REQUEST: 'an API client restarted its tests',
  SKIP_THE_LINE_INTERRUPTED: 'an urgent PR skipped the line ahead of it',
  BISECTION_REQUIRED: 'its batch failed, so it is tested in smaller groups to find the culprit',
  BISECTION_TEST_RUN_PASSED: 'its group passed during bisection',
  FLAKY_FAILURE_RETRIED: 'its run failed only on tests known to be flaky, so the same commit is tested again',
  PROBATION_REQUIRED: 'it looks risky, so it is tested alone before it joins the line',
  PROBATION_PASSED: 'it passed its test alone and joins the line',
  // Passed
  FLAKY_FAILURES_IGNORED: 'its run failed only on quarantined or known-flaky tests, which the queue ignores',
  // Merges
  MERGE_GRAPH_MERGE: 'its tests passed and the queue merged it',
  MANUAL_MERGE: 'it was merged by hand',
  MERGE_GRAPH_DIRECT_MERGE: 'the queue merged it directly, without a test run',
  AWAITING_READINESS: 'it is waiting until it can enter the queue (mergeability, impacted targets)',
  QUEUE_NOT_ACCEPTING: 'the queue is not accepting pull requests',
};

/** The sentence for a reason code, or the code itself when no sentence is known. */
export function explainReason(code: string): string {
  return SENTENCES[code] ?? code;
}

/** Whether a sentence is known for the code. */
export function hasExplanation(code: string): boolean {
  return Object.hasOwn(SENTENCES, code);
}
