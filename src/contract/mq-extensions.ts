/** Railyard's own merge-queue operations' schemas (beyond Trunk's v1): a PR's history and a check's log. */
import { z } from 'zod';
import { DateTimeOutput, NonEmptyString, OwnerSlashName, REPO_HOST_MAX, ShortString } from './common.js';
import { PULL_REQUEST_STATES } from './constants.js';
import { TargetBranch } from './mq.js';

/** One state change of a pull request (the shape of Trunk v2's queue-entry history). */
export const PullRequestTransition = z.object({
  /** The submission (queue entry) it belongs to: a new one after each resubmission. */
  queueEntryId: z.string(),
  state: z.enum(PULL_REQUEST_STATES),
  /** Absent on the first row of a submission. */
  previousState: z.enum(PULL_REQUEST_STATES).optional(),
  /** A reason code (failure, cancellation, queued or merged reason), when there is one. */
  reason: z.string().optional(),
  at: DateTimeOutput,
  /** The test run testing (or that tested) the PR, from `testing` on. */
  testRunId: z.string().optional(),
  /** Failures: what went wrong, for people (the conflicting PR and files, what is wrong in railyard.json, the failed checks). */
  detail: z.string().optional(),
});
export type PullRequestTransition = z.infer<typeof PullRequestTransition>;

export const PullRequestHistoryResponse = z.object({
  prNumber: z.number(),
  /** Every state change over every submission of the PR to this queue, oldest first. */
  transitions: z.array(PullRequestTransition),
});
export type PullRequestHistoryResponse = z.infer<typeof PullRequestHistoryResponse>;

/** The most of a check's output served: its end, where the failure usually is. */
export const CHECK_LOG_MAX_BYTES = 1024 * 1024;

/** Query of getCheckRunLog (a GET, so a check run's `url` can point at it). */
export const CheckRunLogQuery = z.object({
  repoHost: NonEmptyString.max(REPO_HOST_MAX),
  repo: OwnerSlashName,
  targetBranch: TargetBranch,
  testRunId: ShortString,
  check: ShortString,
});
export type CheckRunLogQuery = z.infer<typeof CheckRunLogQuery>;
