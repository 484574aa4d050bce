/**
 * The v2 API's vocabulary and request schemas, after Trunk's published v2 description: camelCase
 * enums, the error codes, the list parameters and the bodies of the writes. Bodies are strict
 * (an unknown key is a 400, never dropped), as Trunk's are.
 */
import { z } from 'zod';
import { FreezeSettingsInput } from '../freezes.js';

export const V2_PREFIX = '/v2';

export const V2_ERROR_CODES = [
  'AUTHENTICATION_REQUIRED',
  'INVALID_TOKEN',
  'INSUFFICIENT_PERMISSIONS',
  'INTERNAL_ERROR',
  'VALIDATION_FAILED',
  'NOT_FOUND',
  'INVALID_CURSOR',
  'MERGE_QUEUE_NOT_FOUND',
  'PR_ALREADY_ENQUEUED',
  'PR_NOT_ENQUEUEABLE',
  'UPSTREAM_ERROR',
  'VERIFICATION_RUN_NOT_FOUND',
  'PR_NOT_FOUND',
  'REPOSITORY_NOT_FOUND',
  'IMPACTED_TARGETS_UNSUPPORTED',
  'QUEUE_ALREADY_EXISTS',
  'QUEUE_HAS_ACTIVE_ENTRIES',
  'MODE_CHANGE_IN_PROGRESS',
  'PR_NOT_IN_ACTIVE_STATE',
  'MERGE_QUEUE_NOT_CREATABLE',
  'PR_TESTS_NOT_RESTARTABLE',
  'ALLOWED_BOT_SUBMITTERS_FROZEN',
  'PROVIDER_URL_NOT_FOUND',
  'RATE_LIMIT_EXCEEDED',
] as const;
export type V2ErrorCode = (typeof V2_ERROR_CODES)[number];

/** v1 state → v2 state (camelCase); the values not listed are the same in both. */
export const V2_ENTRY_STATES = {
  not_ready: 'notReady',
  pending: 'pending',
  testing: 'testing',
  tests_passed: 'testsPassed',
  merged: 'merged',
  failed: 'failed',
  cancelled: 'cancelled',
  pending_failure: 'pendingFailure',
} as const;
export type V2EntryState = (typeof V2_ENTRY_STATES)[keyof typeof V2_ENTRY_STATES];

export const V2_QUEUE_STATES = {
  running: 'running',
  paused: 'paused',
  draining: 'draining',
  switching_modes: 'switchingModes',
} as const;
export const V2_MODES = { single: 'queue', parallel: 'graph' } as const;
export const V2_MERGE_METHODS = { merge_commit: 'mergeCommit', squash: 'squash', rebase: 'rebase' } as const;
export const V2_OPTIMIZATION_MODES = {
  off: 'off',
  bisection_skip_redundant_tests: 'bisectionSkipRedundantTests',
} as const;
export const V2_MERGEABILITY = {
  unspecified: 'unspecified',
  in_progress: 'inProgress',
  mergeable: 'mergeable',
  not_mergeable: 'notMergeable',
} as const;

/** The inverse of a v1 → v2 map. */
export function invert<K extends string, V extends string>(map: Record<K, V>): Record<V, K> {
  return Object.fromEntries(Object.entries(map).map(([k, v]) => [v, k])) as Record<V, K>;
}

const values = <T extends Record<string, string>>(map: T) =>
  Object.values(map) as [T[keyof T], ...T[keyof T][]];

export const V2Mode = z.enum(values(V2_MODES));
export const V2EntryStateEnum = z.enum(values(V2_ENTRY_STATES));

// ---------------------------------------------------------------- query strings

/** A query flag: `true` or `false` (absent = false). */
const QueryBool = z.enum(['true', 'false']).transform((v) => v === 'true');

/** `limit` 1–100 (default 25), `cursor` (an earlier nextCursor, verbatim), `includeTotal`. */
export const ListParams = {
  limit: z
    .string()
    .regex(/^\d+$/, 'must be a whole number from 1 to 100')
    .transform(Number)
    .pipe(z.number().int().min(1).max(100))
    .optional(),
  cursor: z.string().min(1).max(2048).optional(),
  includeTotal: QueryBool.optional(),
};
export const ListQuery = z.strictObject(ListParams);

export const MergeQueuesQuery = z.strictObject({
  ...ListParams,
  repositoryId: z.uuid().optional(),
  targetBranch: z.string().min(1).max(255).optional(),
});

/** A comma-separated list of camelCase states. */
const StateList = z
  .string()
  .transform((s) => s.split(','))
  .pipe(z.array(V2EntryStateEnum).min(1));

export const QueuePullRequestsQuery = z.strictObject({
  ...ListParams,
  state: StateList.optional(),
  author: z.string().min(1).max(255).optional(),
  concludedAfter: z.iso.datetime().optional(),
  concludedBefore: z.iso.datetime().optional(),
  sort: z.literal('createdAt').optional(),
  direction: z.literal('desc').optional(),
});

/** Up to 50 comma-separated positive PR numbers. */
const NumberList = z
  .string()
  .transform((s) => s.split(','))
  .pipe(
    z
      .array(
        z
          .string()
          .regex(/^[1-9]\d{0,7}$/, 'must be a pull request number')
          .transform(Number),
      )
      .min(1)
      .max(50),
  );

export const ResolvePullRequestsQuery = z.strictObject({
  ...ListParams,
  repositoryId: z.uuid(),
  number: NumberList.optional(),
  branch: z.string().min(1).max(255).optional(),
  baseBranch: z.string().min(1).max(255).optional(),
});

export const Direction = z.enum(['oldest', 'newest']);
export const HistoryQuery = z.strictObject({ ...ListParams, direction: Direction.optional() });

export const BatchHistoryQuery = z.strictObject({
  ...ListParams,
  direction: Direction.optional(),
  pullRequestIds: z
    .string()
    .transform((s) => s.split(','))
    .pipe(z.array(z.uuid()).min(1).max(50)),
});

export const RepositoriesQuery = z.strictObject({ ...ListParams, providerUrl: z.string().min(1).max(2048) });

// ---------------------------------------------------------------- bodies

const PriorityValue = z.number().int().min(0).max(32767);
const PriorityName = z.string().min(1).max(64);

export const CreateMergeQueueRequest = z.strictObject({
  repositoryId: z.uuid(),
  targetBranch: z.string().min(1).max(255),
  mode: V2Mode.optional(),
  concurrency: z.number().int().min(1).max(1000).optional(),
  bisectionConcurrency: z.number().int().min(0).max(1000).optional(),
  enqueueingLabel: z.string().min(1).max(255).optional(),
});

export const UpdateMergeQueueConfigRequest = z.strictObject({
  concurrency: z.number().int().min(1).max(1000).optional(),
  bisectionConcurrency: z.number().int().min(0).max(1000).optional(),
  pendingFailureDepth: z.number().int().min(0).max(1000).optional(),
  canOptimisticallyMerge: z.boolean().optional(),
  allowBatching: z.boolean().optional(),
  batchingMaxWaitTimeMinutes: z.number().int().min(0).max(10080).optional(),
  batchingMinSize: z.number().int().min(1).max(1000).optional(),
  testingTimeoutMinutes: z
    .union([z.number().int().min(0).max(10080), z.literal('auto')])
    .optional()
    .meta({
      description:
        'Minutes before a run fails (0 = never), or "auto" (Railyard extension): 1.5 × the p95 of the last 50 passing runs, at least 10, and 60 until 10 runs passed',
    }),
  notReadyTimeoutMinutes: z.number().int().min(0).max(43200).multipleOf(60).optional(),
  createsPrsForTestingBranches: z.boolean().optional(),
  areCommentsEnabled: z.boolean().optional(),
  areCommandsEnabled: z.boolean().optional(),
  isStatusCheckEnabled: z.boolean().optional(),
  isExtensionEnabled: z.boolean().optional(),
  areLabelCommandsEnabled: z.boolean().optional(),
  areStateLabelsEnabled: z.boolean().optional(),
  requiredStatuses: z.array(z.string().min(1).max(255)).max(100).optional(),
  allowedBotSubmitters: z.array(z.string().min(1).max(255)).max(100).optional(),
  batchingRules: z
    .array(z.strictObject({ targetPattern: z.string().min(1).max(1024), policy: z.literal('isolate') }))
    .max(100)
    .optional(),
  directMergeMode: z.enum(['off', 'always']).optional(),
  optimizationMode: z.enum(values(V2_OPTIMIZATION_MODES)).optional(),
  mergeMethod: z.enum(values(V2_MERGE_METHODS)).optional(),
  testBranchConstructionMode: z.enum(['renameTempBranch', 'pushNewBranchFromTemp']).optional(),
  enqueueingLabel: z.string().min(1).max(255).optional(),
  // Railyard's own settings (x-railyard), as v1's updateQueue takes them.
  'x-railyard-freezes': FreezeSettingsInput.freezes,
  'x-railyard-freezeBypassPriority': FreezeSettingsInput.freezeBypassPriority,
});
export type UpdateMergeQueueConfigRequest = z.infer<typeof UpdateMergeQueueConfigRequest>;

export const SwitchModesRequest = z.strictObject({ mode: V2Mode });

const bothPriorities = (b: { priorityValue?: number; priorityName?: string }) =>
  !(b.priorityValue !== undefined && b.priorityName !== undefined);
const BOTH = { message: 'priorityValue and priorityName are mutually exclusive: send one' };

export const SubmitPullRequestRequest = z
  .strictObject({
    number: z.number().int().min(1).max(10_000_000),
    allowBatching: z.boolean().optional(),
    priorityValue: PriorityValue.optional(),
    priorityName: PriorityName.optional(),
    direct: z.boolean().optional(),
  })
  .refine(bothPriorities, BOTH);

export const ReprioritizeRequest = z
  .strictObject({ priorityValue: PriorityValue.optional(), priorityName: PriorityName.optional() })
  .refine(bothPriorities, BOTH)
  .refine((b) => b.priorityValue !== undefined || b.priorityName !== undefined, {
    message: 'send priorityValue or priorityName',
  });

export const UpdateQueueEntryRequest = z
  .strictObject({
    priorityValue: PriorityValue.optional(),
    priorityName: PriorityName.optional(),
    direct: z.boolean().optional(),
    allowBatching: z.boolean().optional(),
  })
  .refine(bothPriorities, BOTH)
  .refine((b) => Object.keys(b).length > 0, {
    message: 'send at least one of priorityValue, priorityName, direct, allowBatching',
  });

/** A body the operation ignores (pause, resume, drain, restart-tests, dequeue). */
export const IgnoredBody = z.unknown();

// ---------------------------------------------------------------- runs, results, targets, metrics

export const V2_RUN_STATUSES = {
  in_progress: 'inProgress',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
} as const;

export const GraphQuery = z.strictObject({ includeImpactedTargets: QueryBool.optional() });

export const QueueRunsQuery = z.strictObject({
  ...ListParams,
  status: z.enum(values(V2_RUN_STATUSES)).optional(),
  createdAfter: z.iso.datetime().optional(),
  sort: z.literal('createdAt').optional(),
  direction: z.literal('desc').optional(),
});

export const PullRequestRunsQuery = z.strictObject({
  ...ListParams,
  status: z.enum(values(V2_RUN_STATUSES)).optional(),
  sort: z.literal('createdAt').optional(),
  direction: z.literal('desc').optional(),
});

export const TestingResultsQuery = z.strictObject({
  ...ListParams,
  since: z.iso.datetime(),
  until: z.iso.datetime().optional(),
});

export const MetricsQuery = z.strictObject({ repositoryId: z.uuid().optional() });

export const UploadImpactedTargetsRequest = z
  .strictObject({
    repositoryId: z.uuid(),
    targetBranch: z.string().min(1).max(255),
    sha: z
      .string()
      .regex(/^[A-Za-z0-9]+$/, 'must be a commit sha')
      .max(64),
    number: z.number().int().min(1).max(10_000_000).optional(),
    branch: z.string().min(1).max(255).optional(),
    impactedTargets: z.array(z.string().min(1).max(1024)).max(100_000).optional(),
    impactsAllTargets: z.literal(true).optional(),
  })
  .refine((b) => (b.number === undefined) !== (b.branch === undefined), {
    message: 'give number or branch (one of them)',
  })
  .refine((b) => (b.impactedTargets === undefined) !== (b.impactsAllTargets === undefined), {
    message: 'give impactedTargets or impactsAllTargets: true (one of them)',
  });
