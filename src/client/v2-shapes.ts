/**
 * Trunk's v2 answers in the v1 contract's shapes, so that a command prints the same whichever
 * API version it talks to: pull requests, queue settings, histories and verification runs.
 * Railyard's own additions come in v2 answers as `x-railyard-*` keys; Trunk's API has none of
 * them, and the v1 fields they fill are optional.
 */
import {
  invert,
  V2_ENTRY_STATES,
  V2_MERGE_METHODS,
  V2_MERGEABILITY,
  V2_MODES,
  V2_OPTIMIZATION_MODES,
  V2_QUEUE_STATES,
  V2_RUN_STATUSES,
} from '../contract/v2/schemas.js';

type Json = Record<string, unknown>;

export const STATE_FROM_V2: Record<string, string> = invert(V2_ENTRY_STATES);
const QUEUE_STATE_FROM_V2: Record<string, string> = invert(V2_QUEUE_STATES);
const MODE_FROM_V2: Record<string, string> = invert(V2_MODES);
const MERGE_METHOD_FROM_V2: Record<string, string> = invert(V2_MERGE_METHODS);
const OPTIMIZATION_FROM_V2: Record<string, string> = invert(V2_OPTIMIZATION_MODES);
const MERGEABILITY_FROM_V2: Record<string, string> = invert(V2_MERGEABILITY);
const RUN_STATUS_FROM_V2: Record<string, string> = invert(V2_RUN_STATUSES);
const SOURCE_FROM_V2: Record<string, string> = {
  trunkConfig: 'trunk_config',
  repoProviderBranchProtection: 'repo_provider_branch_protection',
  mergeInstance: 'merge_instance',
};

/** A value of a v2 enum in v1's spelling; a value v1 does not know passes as it came. */
const back = (map: Record<string, string>, value: unknown) =>
  typeof value === 'string' ? (map[value] ?? value) : value;

/** Copies `from[key]` to `to[name]` when it is there (absent and null stay absent). */
function copy(to: Json, name: string, from: Json | undefined, key: string): void {
  const value = from?.[key];
  if (value !== undefined && value !== null) to[name] = value;
}

/** The fields v1's queue list items and submitted PRs share, from a v2 PullRequest with its queueEntry. */
function prCore(pr: Json): Json {
  const entry = (pr.queueEntry ?? {}) as Json;
  const out: Json = {};
  copy(out, 'id', entry, 'id');
  if (entry.state !== undefined) out.state = back(STATE_FROM_V2, entry.state);
  out.stateChangedAt = entry.stateChangedAt;
  out.priorityValue = entry.priorityValue;
  out.priorityName = entry.priorityName;
  copy(out, 'usedDefaultPriorityName', entry, 'usedDefaultPriorityName');
  out.skipTheLine = entry.skipsTheLine ?? entry.priorityValue === 0;
  out.prNumber = pr.number;
  out.prTitle = pr.title;
  out.prSha = pr.sha;
  out.prBaseBranch = pr.baseBranch;
  out.prAuthor = pr.author;
  copy(out, 'stateReason', entry, 'x-railyard-stateReason');
  copy(out, 'testRunId', entry, 'x-railyard-testRunId');
  copy(out, 'enqueuedAt', entry, 'x-railyard-enqueuedAt');
  copy(out, 'riskEstimate', entry, 'x-railyard-riskEstimate');
  return out;
}

/** A v2 PullRequest as v1's queue list item (getQueue's enqueuedPullRequests, listPullRequests). */
export function listItemOf(pr: Json): Json {
  const out = prCore(pr);
  out.noBatch = (pr.queueEntry as Json | undefined)?.allowBatching === false;
  return out;
}

/** A v2 PullRequest as v1's getSubmittedPullRequest answer. */
export function submittedOf(pr: Json): Json {
  const entry = (pr.queueEntry ?? {}) as Json;
  const out = prCore(pr);
  const r = entry.readiness as Json | undefined;
  if (r) {
    const readiness: Json = {};
    copy(readiness, 'hasImpactedTargets', r, 'hasImpactedTargets');
    readiness.requiresImpactedTargets = r.requiresImpactedTargets;
    readiness.doesBaseBranchMatch = r.doesBaseBranchMatch;
    readiness.gitHubMergeability = back(MERGEABILITY_FROM_V2, r.mergeability);
    copy(readiness, 'waitingFor', r, 'x-railyard-waitingFor');
    copy(readiness, 'blockedBy', r, 'x-railyard-blockedBy');
    copy(readiness, 'conflict', r, 'x-railyard-conflict');
    out.readiness = readiness;
  }
  out.forceEnqueued = entry.direct === true;
  out.isCurrentlySubmittedToQueue =
    typeof pr.isCurrentlySubmittedToQueue === 'boolean'
      ? pr.isCurrentlySubmittedToQueue
      : !['merged', 'failed', 'cancelled'].includes(String(out.state));
  return out;
}

/** A v2 MergeQueue as v1's queue settings (getQueue without its PRs, updateQueue's answer). */
export function settingsOf(queue: Json): Json {
  const c = (queue.config ?? {}) as Json;
  return {
    state: back(QUEUE_STATE_FROM_V2, queue.state),
    branch: queue.targetBranch,
    concurrency: c.concurrency,
    // v2 gives the timeout in force; Railyard's mode says whether it follows the CI ("auto").
    ...(c['x-railyard-testingTimeoutMode'] === 'auto'
      ? { testingTimeoutMinutes: 'auto', testingTimeoutMinutesNow: c.testingTimeoutMinutes }
      : { testingTimeoutMinutes: c.testingTimeoutMinutes }),
    mode: back(MODE_FROM_V2, queue.mode),
    canOptimisticallyMerge: c.canOptimisticallyMerge,
    pendingFailureDepth: c.pendingFailureDepth,
    batch: c.allowBatching,
    batchingMaxWaitTimeMinutes: c.batchingMaxWaitTimeMinutes,
    batchingMinSize: c.batchingMinSize,
    createPrsForTestingBranches: c.createsPrsForTestingBranches,
    commentsEnabled: c.areCommentsEnabled,
    commandsEnabled: c.areCommandsEnabled,
    statusCheckEnabled: c.isStatusCheckEnabled,
    bisectionConcurrency: c.bisectionConcurrency,
    requiredStatuses:
      Array.isArray(c.requiredStatuses) && c.requiredStatuses.length ? c.requiredStatuses : null,
    directMergeMode: c.directMergeMode,
    optimizationMode: back(OPTIMIZATION_FROM_V2, c.optimizationMode),
    mergeMethod: back(MERGE_METHOD_FROM_V2, c.mergeMethod),
    extensionEnabled: c.isExtensionEnabled,
    enqueueingLabel: c.enqueueingLabel ?? '',
    labelCommandsEnabled: c.areLabelCommandsEnabled,
    stateLabelsEnabled: c.areStateLabelsEnabled,
    // Railyard's settings; Trunk's queues have none of them and show v1's defaults.
    flakyPolicy: c['x-railyard-flakyPolicy'] ?? 'off',
    flakyReportGraceSeconds: c['x-railyard-flakyReportGraceSeconds'] ?? 0,
    flakyRetries: c['x-railyard-flakyRetries'] ?? 0,
    probationThreshold: c['x-railyard-probationThreshold'] ?? null,
    freezes: c['x-railyard-freezes'] ?? [],
    freezeBypassPriority: c['x-railyard-freezeBypassPriority'] ?? 0,
    ...(queue['x-railyard-frozen'] ? { frozen: queue['x-railyard-frozen'] } : {}),
  };
}

/** v1's updateQueue settings under their v2 names (JSON Merge Patch of /config). */
export const CONFIG_TO_V2: Record<string, string> = {
  concurrency: 'concurrency',
  bisectionConcurrency: 'bisectionConcurrency',
  pendingFailureDepth: 'pendingFailureDepth',
  canOptimisticallyMerge: 'canOptimisticallyMerge',
  batch: 'allowBatching',
  batchingMaxWaitTimeMinutes: 'batchingMaxWaitTimeMinutes',
  batchingMinSize: 'batchingMinSize',
  testingTimeoutMinutes: 'testingTimeoutMinutes',
  createPrsForTestingBranches: 'createsPrsForTestingBranches',
  commentsEnabled: 'areCommentsEnabled',
  commandsEnabled: 'areCommandsEnabled',
  statusCheckEnabled: 'isStatusCheckEnabled',
  extensionEnabled: 'isExtensionEnabled',
  labelCommandsEnabled: 'areLabelCommandsEnabled',
  stateLabelsEnabled: 'areStateLabelsEnabled',
  directMergeMode: 'directMergeMode',
  enqueueingLabel: 'enqueueingLabel',
  requiredStatuses: 'requiredStatuses',
  freezes: 'x-railyard-freezes',
  freezeBypassPriority: 'x-railyard-freezeBypassPriority',
};

/** The v2 config patch of a v1 updateQueue body's settings, and the keys v2 has no setting for. */
export function configPatchOf(body: Json): { patch: Json; unknown: string[] } {
  const patch: Json = {};
  const unknown: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (value === undefined || ['repo', 'targetBranch', 'state', 'mode'].includes(key)) continue;
    if (key === 'mergeMethod')
      patch.mergeMethod = V2_MERGE_METHODS[value as keyof typeof V2_MERGE_METHODS] ?? value;
    else if (key === 'optimizationMode')
      patch.optimizationMode = V2_OPTIMIZATION_MODES[value as keyof typeof V2_OPTIMIZATION_MODES] ?? value;
    else if (key === 'deleteRequiredStatuses') {
      if (value === true) patch.requiredStatuses = [];
    } else if (CONFIG_TO_V2[key]) patch[CONFIG_TO_V2[key]] = value;
    else unknown.push(key);
  }
  return { patch, unknown };
}

/** A v2 QueueEntryStateTransition as v1's PullRequestTransition. */
export function transitionOf(t: Json): Json {
  const out: Json = { queueEntryId: t['x-railyard-queueEntryId'] ?? '' };
  out.state = back(STATE_FROM_V2, t.state);
  if (t['x-railyard-previousState'] !== undefined)
    out.previousState = back(STATE_FROM_V2, t['x-railyard-previousState']);
  copy(out, 'reason', t, 'reason');
  out.at = t.changedAt;
  const run = t['x-railyard-testRunId'] ?? t.verificationRunId;
  if (run !== undefined && run !== null) out.testRunId = run;
  copy(out, 'detail', t, 'x-railyard-detail');
  return out;
}

const upper = (value: unknown) =>
  typeof value === 'string' ? value.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase() : undefined;

/** A v2 VerificationRun as v1's getMergeQueueTestingDetails answer. */
export function testingDetailsOf(run: Json): Json {
  const checks = (Array.isArray(run.checks) ? run.checks : []) as Json[];
  const prs = (list: unknown) => (Array.isArray(list) ? (list as Json[]) : []);
  const out: Json = { requiredStatuses: run.requiredStatuses ?? [] };
  if (run.requiredStatusesSource !== undefined)
    out.requiredStatusesSource = back(SOURCE_FROM_V2, run.requiredStatusesSource);
  out.testBranch = run.testBranch;
  out.testBranchSha = run.testBranchSha;
  copy(out, 'createdAt', run, 'createdAt');
  if (run.status !== undefined) out.status = back(RUN_STATUS_FROM_V2, run.status);
  out.checkSuites = [
    {
      checkRuns: checks
        .filter((c) => c.kind !== 'statusCheck')
        .map((c) => ({
          name: c.name,
          url: c.url ?? '',
          ...(c.status ? { status: upper(c.status) } : {}),
          ...(c.conclusion ? { conclusion: upper(c.conclusion) } : {}),
        })),
    },
  ];
  out.statusChecks = checks
    .filter((c) => c.kind === 'statusCheck')
    .map((c) => ({
      context: c.name,
      ...(c.url ? { url: c.url } : {}),
      ...(c.conclusion ? { state: upper(c.conclusion) } : {}),
    }));
  out.testedPullRequests = prs(run.testedPullRequests).map((p) => ({
    prNumber: p.number,
    prUrl: p.url,
    title: p.title,
  }));
  out.dependentPrs = prs(run.dependentPullRequests).map((p) => p.number);
  return out;
}
