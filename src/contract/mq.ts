/** The merge-queue operations' schemas: enums, PR and queue objects, requests and answers of every mq operation. */
import { z } from 'zod';
import { branchNameProblem, describeBranchProblem } from './branch-name.js';
import { FreezeSettingsInput, FreezeSettingsOutput } from './freezes.js';
import {
  BranchNameInput,
  DateTimeInput,
  DateTimeOutput,
  looseEnum,
  looseInt,
  NonEmptyString,
  OwnerSlashName,
  Repo,
  REPO_HOST_MAX,
  SHORT_STRING_MAX,
  ShortString,
  U32_MAX,
} from './common.js';
import {
  DIRECT_MERGE_MODES,
  FLAKY_POLICIES,
  MERGE_METHODS,
  MERGEABILITY,
  MODES,
  OPTIMIZATION_MODES,
  PULL_REQUEST_STATES,
  QUEUE_STATES,
  SETTABLE_QUEUE_STATES,
  WAIT_REASONS,
} from './constants.js';
import type * as C from './constants.js';

// ---------------------------------------------------------------- enums

export * from './constants.js';

// A schema and its type share a name: the types are re-declared next to the schemas.
export type PullRequestState = C.PullRequestState;
export type Mode = C.Mode;
export type DirectMergeMode = C.DirectMergeMode;
export type OptimizationMode = C.OptimizationMode;
export type MergeMethod = C.MergeMethod;
export const PullRequestState = looseEnum(PULL_REQUEST_STATES);
export const QueueStateInput = looseEnum(SETTABLE_QUEUE_STATES);
export const Mode = looseEnum(MODES);
export const DirectMergeMode = looseEnum(DIRECT_MERGE_MODES);
export const OptimizationMode = looseEnum(OPTIMIZATION_MODES);
export const MergeMethod = looseEnum(MERGE_METHODS);
export type FlakyPolicy = C.FlakyPolicy;
export const FlakyPolicy = looseEnum(FLAKY_POLICIES);

/** Marks a field of a Trunk operation as a Railyard addition in the OpenAPI document. */
const extension = <T extends z.ZodType>(schema: T, description: string): T =>
  schema.meta({ 'x-railyard-extension': true, description });

/** The flaky-aware queue settings (Railyard extensions, docs/decisions.md), as updateQueue accepts them. */
const FlakySettingsInput = {
  flakyPolicy: extension(
    FlakyPolicy.optional(),
    'Which failing tests do not fail a test run: off, ignore_quarantined, ignore_flaky',
  ),
  flakyReportGraceSeconds: extension(
    looseInt(0, 3600).optional(),
    'How long a failed check waits for its uploaded test results before it counts as an ordinary failure',
  ),
  flakyRetries: extension(
    looseInt(0, 3).optional(),
    'Retries of a failure whose failing tests all have flake history',
  ),
  probationThreshold: extension(
    z.number().min(0).max(1).nullable().optional(),
    'PRs whose riskEstimate is above this are tested alone, off the line, before they join it; null = off',
  ),
};

// ---------------------------------------------------------------- priority

export const PRIORITY_NAMES = { urgent: 0, high: 10, medium: 100, low: 200 } as const;
export type PriorityName = keyof typeof PRIORITY_NAMES;
export const DEFAULT_PRIORITY: PriorityName = 'medium';

/** Request `priority`: a number 0..255, a name (any case), or null for the default. */
export const PriorityInput = z.union([
  looseInt(0, 255),
  looseEnum(Object.keys(PRIORITY_NAMES) as [PriorityName, ...PriorityName[]]),
  z.null(),
]);
export type PriorityInput = z.infer<typeof PriorityInput>;

export interface ResolvedPriority {
  value: number;
  name: string;
  usedDefaultName: boolean;
  skipTheLine: boolean;
}

/** Maps a request priority to the value, name and skip-the-line flag the API reports. */
export function resolvePriority(input: PriorityInput | undefined): ResolvedPriority {
  if (input === undefined || input === null) {
    return {
      value: PRIORITY_NAMES[DEFAULT_PRIORITY],
      name: DEFAULT_PRIORITY,
      usedDefaultName: true,
      skipTheLine: false,
    };
  }
  if (typeof input === 'number') {
    const named = (Object.entries(PRIORITY_NAMES) as [PriorityName, number][]).find(([, v]) => v === input);
    return {
      value: input,
      name: named ? named[0] : String(input),
      usedDefaultName: false,
      skipTheLine: input === 0,
    };
  }
  const value = PRIORITY_NAMES[input];
  return { value, name: input, usedDefaultName: false, skipTheLine: value === 0 };
}

// ---------------------------------------------------------------- request pieces

export const PrNumber = looseInt(0, U32_MAX);
/** A queue's branch: a valid branch name (see branch-name.ts), else 400 naming the rule it breaks. */
export const TargetBranch = NonEmptyString.superRefine((name, ctx) => {
  const problem = branchNameProblem(name);
  if (problem) ctx.addIssue({ code: 'custom', message: describeBranchProblem(name, problem) });
});

const PrRef = z.object({ number: PrNumber });

const QueueKey = { repo: Repo, targetBranch: TargetBranch };

export const SubmitPullRequestRequest = z.object({
  ...QueueKey,
  pr: PrRef,
  priority: PriorityInput.optional(),
  noBatch: z.boolean().optional(),
  direct: extension(
    z.boolean().optional(),
    "Admit the PR past the forge's own pull-request requirements (mergeability, branch protection); it is still tested. Needs the `direct` permission",
  ),
});
export type SubmitPullRequestRequest = z.infer<typeof SubmitPullRequestRequest>;

export const PullRequestActionRequest = z.object({ ...QueueKey, pr: PrRef });
export type PullRequestActionRequest = z.infer<typeof PullRequestActionRequest>;

export const GetSubmittedPullRequestRequest = z.object({
  ...QueueKey,
  pr: z
    .object({ number: PrNumber.optional(), branch: BranchNameInput.optional() })
    .refine((pr) => (pr.number === undefined) !== (pr.branch === undefined), {
      message: 'give exactly one of number or branch',
    }),
  includeTimeline: z.boolean().optional(),
  includeEstimatedTimeToMerge: z.boolean().optional(),
});
export type GetSubmittedPullRequestRequest = z.infer<typeof GetSubmittedPullRequestRequest>;

export const ListPullRequestsRequest = z.object({
  ...QueueKey,
  state: PullRequestState.optional(),
  since: DateTimeInput.optional(),
  until: DateTimeInput.optional(),
  cursor: z.string().max(SHORT_STRING_MAX).optional(),
  take: looseInt(1, 100).optional(),
});
export type ListPullRequestsRequest = z.infer<typeof ListPullRequestsRequest>;

/** The longest impacted target accepted (a Bazel label or a path; far below in practice). */
export const MAX_IMPACTED_TARGET_CHARS = 4096;

export const ImpactedTargets = z.union([
  z.array(z.string().max(MAX_IMPACTED_TARGET_CHARS)),
  z
    .string()
    .max(3)
    .refine((s) => s.toUpperCase() === 'ALL', { message: 'must be a list of targets or "ALL"' })
    .transform(() => 'ALL' as const),
]);
export type ImpactedTargets = string[] | 'ALL';

export const SetImpactedTargetsRequest = z.object({
  ...QueueKey,
  pr: z.object({ number: looseInt(1, U32_MAX), sha: ShortString }),
  impactedTargets: ImpactedTargets,
});
export type SetImpactedTargetsRequest = z.infer<typeof SetImpactedTargetsRequest>;

export const TestingDetailsRequest = z.object({ ...QueueKey, testRunId: ShortString });
export type TestingDetailsRequest = z.infer<typeof TestingDetailsRequest>;

export const QueueKeyRequest = z.object(QueueKey);
export type QueueKeyRequest = z.infer<typeof QueueKeyRequest>;

const positive = () => looseInt(1, U32_MAX).optional();
const nonNegative = () => looseInt(0, U32_MAX).optional();

export const UpdateQueueRequest = z.object({
  ...QueueKey,
  state: QueueStateInput.optional(),
  mode: Mode.optional(),
  concurrency: positive(),
  bisectionConcurrency: positive(),
  testingTimeoutMinutes: z
    .union([looseInt(0, U32_MAX), z.literal('auto')])
    .optional()
    .meta({
      description:
        'Minutes before a run fails with TEST_RUN_TIMEOUT (0 = never), or "auto" (Railyard extension): 1.5 × the p95 of the last 50 passing runs, at least 10, and 60 until 10 runs passed',
    }),
  pendingFailureDepth: nonNegative(),
  canOptimisticallyMerge: z.boolean().optional(),
  batch: z.boolean().optional(),
  batchingMaxWaitTimeMinutes: positive(),
  batchingMinSize: positive(),
  createPrsForTestingBranches: z.boolean().optional(),
  commentsEnabled: z.boolean().optional(),
  commandsEnabled: z.boolean().optional(),
  statusCheckEnabled: z.boolean().optional(),
  directMergeMode: DirectMergeMode.optional(),
  optimizationMode: OptimizationMode.optional(),
  mergeMethod: MergeMethod.optional(),
  requiredStatuses: z.array(ShortString).max(256).optional(),
  deleteRequiredStatuses: z.boolean().optional(),
  extensionEnabled: z.boolean().optional(),
  enqueueingLabel: ShortString.optional(),
  labelCommandsEnabled: z.boolean().optional(),
  stateLabelsEnabled: z.boolean().optional(),
  ...FlakySettingsInput,
  ...FreezeSettingsInput,
});
export type UpdateQueueRequest = z.infer<typeof UpdateQueueRequest>;

/** The updateQueue fields createQueue also applies (a Railyard extension; Trunk's createQueue takes only mode and concurrency). */
const {
  repo: _repo,
  targetBranch: _branch,
  mode: _mode,
  concurrency: _concurrency,
  ...settingsShape
} = UpdateQueueRequest.shape;
const createExtensions = Object.fromEntries(
  Object.entries(settingsShape).map(([name, field]) => [
    name,
    field.meta({
      'x-railyard-extension': true,
      description: 'Railyard extension: applied to the new queue as updateQueue would apply it',
    }),
  ]),
) as { [K in keyof typeof settingsShape]: (typeof settingsShape)[K] };

export const CreateQueueRequest = z.object({
  ...QueueKey,
  mode: Mode.optional(),
  concurrency: looseInt(1, U32_MAX).optional(),
  ...createExtensions,
});
export type CreateQueueRequest = z.infer<typeof CreateQueueRequest>;

export const MetricsQuery = z.object({
  repo: OwnerSlashName.optional(),
  repoHost: NonEmptyString.max(REPO_HOST_MAX).optional(),
});
export type MetricsQuery = z.infer<typeof MetricsQuery>;

// ---------------------------------------------------------------- responses

export const Readiness = z.object({
  hasImpactedTargets: z.boolean().optional(),
  requiresImpactedTargets: z.boolean(),
  doesBaseBranchMatch: z.boolean(),
  gitHubMergeability: z.enum(MERGEABILITY),
  // Railyard extension (Trunk clients ignore it): what the PR waits for, while it is in the queue.
  waitingFor: z.array(z.enum(WAIT_REASONS)).optional(),
  // Railyard extension: what the target's branch protection still waits for, as the forge tells it.
  blockedBy: z.string().optional(),
  conflict: extension(
    z
      .object({
        message: z.string(),
        files: z.array(z.string()).optional(),
        commit: z
          .object({ sha: z.string(), subject: z.string(), prNumber: z.number().optional() })
          .optional(),
      })
      .optional(),
    'Why the PR does not merge onto its base branch and what to do, in one sentence (message), with the conflicting ' +
      'files and the commit on the base branch that last changed them when the forge can tell',
  ),
});
export type Readiness = z.infer<typeof Readiness>;

const PullRequestCore = {
  id: z.string().optional(),
  state: z.enum(PULL_REQUEST_STATES).optional(),
  stateChangedAt: DateTimeOutput,
  priorityValue: z.number(),
  priorityName: z.string(),
  usedDefaultPriorityName: z.string().optional(),
  skipTheLine: z.boolean(),
  prNumber: z.number(),
  prTitle: z.string(),
  prSha: z.string(),
  prBaseBranch: z.string(),
  prAuthor: z.string(),
  // Railyard extensions (optional; Trunk clients ignore them): why the PR is in its state,
  // and the test run that is testing (or last tested) it.
  stateReason: z.string().optional(),
  testRunId: z.string().optional(),
  /** When this submission entered the queue. */
  enqueuedAt: DateTimeOutput.optional(),
  direct: extension(
    z.boolean().optional(),
    "Submitted direct: admitted past the forge's pull-request requirements, still tested (absent when not)",
  ),
  riskEstimate: extension(
    z.number().min(0).max(1).optional(),
    "The PR's failure probability, estimated by the server when the PR is submitted from the queue's own stored history: an online logistic regression over its author, the paths it changes (or its impacted targets), its size, how often those paths failed recently and its earlier outcomes in the queue (absent until estimated)",
  ),
  stack: extension(
    z.object({ prNumbers: z.array(z.number()), description: z.string() }).optional(),
    'Stacked PRs: the PRs of its stack, bottom first, tested and landed as one unit, and the same for people (`stack of 3: #4 ← #5 ← #6`); absent when the PR is stacked on no other PR and none on it',
  ),
};

/** One state change in a getSubmittedPullRequest(s) `timeline` (with includeTimeline): newest first, Trunk's `timestamp`. */
export const TimelineItem = z.object({
  state: z.enum(PULL_REQUEST_STATES),
  timestamp: DateTimeOutput,
  /** A reason code (failure, cancellation, queued or merged reason), when there is one. */
  reason: z.string().optional(),
  /** The test run testing (or that tested) the PR, from `testing` on. */
  testRunId: z.string().optional(),
  /** Failures: what went wrong, for people. */
  detail: z.string().optional(),
});
export type TimelineItem = z.infer<typeof TimelineItem>;

export const SubmittedPullRequest = z.object({
  ...PullRequestCore,
  readiness: Readiness.optional(),
  forceEnqueued: z.boolean(),
  isCurrentlySubmittedToQueue: z.boolean(),
  /** With includeTimeline: the state changes of this submission, newest first. */
  timeline: z.array(TimelineItem).optional(),
});
export type SubmittedPullRequest = z.infer<typeof SubmittedPullRequest>;

export const QueueListItem = z.object({
  ...PullRequestCore,
  noBatch: z.boolean(),
  // Railyard extension: in a parallel queue, the lane of a PR in the line (1 = the lane of the
  // first PR of the line). PRs of different lanes are tested and merged independently.
  lane: z.number().optional(),
});
export type QueueListItem = z.infer<typeof QueueListItem>;

export const ListPullRequestsResponse = z.object({
  pullRequests: z.array(QueueListItem),
  nextCursor: z.string().optional(),
});
export type ListPullRequestsResponse = z.infer<typeof ListPullRequestsResponse>;

export const QueueSettings = z.object({
  state: z.enum(QUEUE_STATES),
  branch: z.string(),
  concurrency: z.number(),
  testingTimeoutMinutes: z.union([z.number(), z.literal('auto')]),
  mode: z.enum(MODES),
  canOptimisticallyMerge: z.boolean(),
  pendingFailureDepth: z.number(),
  batch: z.boolean(),
  batchingMaxWaitTimeMinutes: z.number(),
  batchingMinSize: z.number(),
  createPrsForTestingBranches: z.boolean(),
  commentsEnabled: z.boolean(),
  commandsEnabled: z.boolean(),
  statusCheckEnabled: z.boolean(),
  bisectionConcurrency: z.number(),
  requiredStatuses: z.array(z.string()).nullable(),
  directMergeMode: z.enum(DIRECT_MERGE_MODES),
  optimizationMode: z.enum(OPTIMIZATION_MODES),
  mergeMethod: z.enum(MERGE_METHODS),
  extensionEnabled: z.boolean(),
  enqueueingLabel: z.string(),
  labelCommandsEnabled: z.boolean(),
  stateLabelsEnabled: z.boolean(),
  flakyPolicy: extension(z.enum(FLAKY_POLICIES), 'Which failing tests do not fail a test run'),
  flakyReportGraceSeconds: extension(z.number(), 'Seconds a failed check waits for its test results'),
  flakyRetries: extension(z.number(), 'Retries of a failure whose failing tests all have flake history'),
  probationThreshold: extension(
    z.number().nullable(),
    'Risk above which a PR is tested alone first; null = off',
  ),
  ...FreezeSettingsOutput,
  testingTimeoutMinutesNow: extension(
    z.number().optional(),
    'With testingTimeoutMinutes "auto": the timeout in force now, in minutes',
  ),
  frozen: extension(
    z.object({ until: z.string(), reason: z.string().optional() }).optional(),
    'While a freeze window holds the queue: until when (chained windows included) and why',
  ),
});
export type QueueSettings = z.infer<typeof QueueSettings>;

export const GetQueueResponse = QueueSettings.extend({ enqueuedPullRequests: z.array(QueueListItem) });
export type GetQueueResponse = z.infer<typeof GetQueueResponse>;

export const CHECK_RUN_STATUSES = ['QUEUED', 'IN_PROGRESS', 'COMPLETED'] as const;
export const CHECK_RUN_CONCLUSIONS = [
  'ACTION_REQUIRED',
  'CANCELLED',
  'FAILURE',
  'NEUTRAL',
  'SUCCESS',
  'SKIPPED',
  'STALE',
  'TIMED_OUT',
] as const;
export const STATUS_CHECK_STATES = ['ERROR', 'FAILURE', 'PENDING', 'SUCCESS'] as const;
export const TEST_RUN_STATUSES = ['in_progress', 'failed', 'cancelled', 'succeeded'] as const;

export const CheckRun = z.object({
  name: z.string(),
  url: z.string(),
  status: z.enum(CHECK_RUN_STATUSES).optional(),
  conclusion: z.enum(CHECK_RUN_CONCLUSIONS).optional(),
});

export const StatusCheck = z.object({
  context: z.string(),
  url: z.string().optional(),
  state: z.enum(STATUS_CHECK_STATES).optional(),
});

export const TestingDetailsResponse = z.object({
  requiredStatuses: z.array(z.string()),
  requiredStatusesSource: z
    .enum(['trunk_config', 'repo_provider_branch_protection', 'merge_instance'])
    .optional(),
  testBranch: z.string(),
  testBranchSha: z.string(),
  createdAt: DateTimeOutput.optional(),
  status: z.enum(TEST_RUN_STATUSES).optional(),
  checkSuites: z.array(z.object({ checkRuns: z.array(CheckRun) })),
  statusChecks: z.array(StatusCheck),
  testedPullRequests: z.array(z.object({ prNumber: z.number(), prUrl: z.string(), title: z.string() })),
  impactedTargets: z.array(z.string()).optional(),
  impactedTargetsForTestedPrs: z.array(z.string()).optional(),
  dependentPrs: z.array(z.number()).optional(),
  failingTests: extension(
    z
      .array(
        z.object({
          name: z.string(),
          quarantined: z.boolean(),
          flaky: z.boolean(),
          changedByPr: z.boolean(),
          ignored: z.boolean(),
        }),
      )
      .optional(),
    "The run's failing tests from its uploaded results, with what the flaky-test data said of each and whether the flake-aware verdict ignored it",
  ),
  retryOf: extension(z.string().optional(), 'The failed run this one tests again (flakyRetries)'),
  pendingChecks: extension(
    z.array(z.object({ name: z.string(), state: z.enum(['running', 'not_reported']) })).optional(),
    'While the run is testing on a forge whose CI Railyard reads (GitHub, GitLab): the checks it still waits for (the required ones, else those reported), running or not reported yet; absent once the run has its verdict, or when this server does not drive the queue',
  ),
});
export type TestingDetailsResponse = z.infer<typeof TestingDetailsResponse>;

export * from './reason-codes.js';
export { FreezeWindowInput } from './freezes.js';
