/**
 * Queues and pull requests as the v2 API shows them (Trunk's MergeQueue, MergeQueueConfig,
 * PullRequest, QueueEntry): v1's engine model under v2's names and camelCase values.
 */
import { isoTime } from '../../../contract/index.js';
import {
  V2_ENTRY_STATES,
  V2_MERGE_METHODS,
  V2_MERGEABILITY,
  V2_MODES,
  V2_OPTIMIZATION_MODES,
  V2_PREFIX,
  V2_QUEUE_STATES,
} from '../../../contract/v2/schemas.js';
import {
  activeFreeze,
  findEntry,
  inTestingMinutes,
  isTerminal,
  readinessOf,
  testingTimeoutMs,
  type Entry,
  type QueueModel,
} from '../../../engine/index.js';
import type { Links } from '../../links.js';
import type { QueueHandle } from '../../queue/handle.js';
import { pullRequestId, repositoryId } from './ids.js';

/** The queue's settings as Trunk's MergeQueueConfig (settings Railyard lacks show their neutral value). */
export function presentConfig(model: QueueModel) {
  const c = model.config;
  return {
    concurrency: c.concurrency,
    bisectionConcurrency: c.bisectionConcurrency,
    pendingFailureDepth: c.pendingFailureDepth,
    canOptimisticallyMerge: c.canOptimisticallyMerge,
    allowBatching: c.batch,
    batchingMaxWaitTimeMinutes: c.batchingMaxWaitTimeMinutes,
    batchingMinSize: c.batchingMinSize,
    testingTimeoutMinutes: inTestingMinutes(testingTimeoutMs(c)),
    notReadyTimeoutMinutes: 0,
    createsPrsForTestingBranches: c.createPrsForTestingBranches,
    areCommentsEnabled: c.commentsEnabled,
    areCommandsEnabled: c.commandsEnabled,
    isStatusCheckEnabled: c.statusCheckEnabled,
    isExtensionEnabled: c.extensionEnabled,
    areLabelCommandsEnabled: c.labelCommandsEnabled,
    areStateLabelsEnabled: c.stateLabelsEnabled,
    requiredStatuses: c.requiredStatuses ?? [],
    allowedBotSubmitters: [] as string[],
    batchingRules: [] as { targetPattern: string; policy: 'isolate' }[],
    directMergeMode: c.directMergeMode,
    optimizationMode: V2_OPTIMIZATION_MODES[c.optimizationMode],
    mergeMethod: V2_MERGE_METHODS[c.mergeMethod],
    testBranchConstructionMode: 'renameTempBranch' as const,
    enqueueingLabel: c.enqueueingLabel,
    // Railyard's own settings (x-railyard): what v1's getQueue shows beside Trunk's.
    'x-railyard-flakyPolicy': c.flakyPolicy,
    'x-railyard-flakyReportGraceSeconds': c.flakyReportGraceSeconds,
    'x-railyard-flakyRetries': c.flakyRetries,
    'x-railyard-probationThreshold': c.probationThreshold,
    // testingTimeoutMinutes above is the timeout in force; this says whether it follows the CI ("auto").
    'x-railyard-testingTimeoutMode':
      c.testingTimeoutMinutes === 'auto' ? ('auto' as const) : ('fixed' as const),
    'x-railyard-freezes': c.freezes ?? [],
    'x-railyard-freezeBypassPriority': c.freezeBypassPriority ?? 0,
  };
}

/** The freeze holding the queue at `now` (until when, chained windows included, and why), if one does. */
function frozenOf(model: QueueModel, now: number) {
  const freeze = activeFreeze(model.config.freezes, now);
  if (!freeze) return {};
  return {
    'x-railyard-frozen': {
      until: isoTime(freeze.until),
      ...(freeze.reason ? { reason: freeze.reason } : {}),
    },
  };
}

export const pullRequestsUrl = (queue: QueueHandle) => `${V2_PREFIX}/merge-queues/${queue.id}/pull-requests`;

/**
 * When the queue was made and last changed: the store keeps no such times, so the oldest and
 * newest entry change stand in (the epoch for a queue no PR was ever submitted to).
 */
function queueTimes(model: QueueModel): { createdAt: string; updatedAt: string } {
  let first = Infinity;
  let last = 0;
  for (const e of model.entries) {
    first = Math.min(first, e.submittedAt);
    last = Math.max(last, e.stateChangedAt);
  }
  if (first === Infinity) first = 0;
  return { createdAt: isoTime(first), updatedAt: isoTime(Math.max(first, last)) };
}

export function presentQueue(queue: QueueHandle, links: Links) {
  const model = queue.model;
  return {
    id: queue.id,
    repositoryId: repositoryId(queue.org, queue.repo),
    targetBranch: model.branch,
    state: V2_QUEUE_STATES[model.config.state],
    ...frozenOf(model, Date.now()),
    mode: V2_MODES[model.config.mode],
    managedState: 'manual' as const,
    ...queueTimes(model),
    repositoryUrl: links.repository(queue.repo),
    pullRequestsUrl: pullRequestsUrl(queue),
    config: presentConfig(model),
  };
}

export function presentStateChange(queue: QueueHandle) {
  return {
    id: queue.id,
    state: V2_QUEUE_STATES[queue.model.config.state],
    mode: V2_MODES[queue.model.config.mode],
    pullRequestsUrl: pullRequestsUrl(queue),
  };
}

/** The queue entry of a PR (Trunk's QueueEntry); `single` reads add readiness.hasImpactedTargets. */
function presentEntry(queue: QueueHandle, entry: Entry, single: boolean) {
  const v1 = readinessOf(queue.model, entry);
  const readiness: Record<string, unknown> = {
    requiresImpactedTargets: v1.requiresImpactedTargets,
    doesBaseBranchMatch: v1.doesBaseBranchMatch,
    mergeability: V2_MERGEABILITY[v1.gitHubMergeability],
  };
  if (single && v1.hasImpactedTargets !== undefined) readiness.hasImpactedTargets = v1.hasImpactedTargets;
  // Railyard's additions (x-railyard), as v1 shows them: what the PR waits for and why.
  if (v1.waitingFor !== undefined) readiness['x-railyard-waitingFor'] = v1.waitingFor;
  if (v1.blockedBy !== undefined) readiness['x-railyard-blockedBy'] = v1.blockedBy;
  if (v1.conflict !== undefined) readiness['x-railyard-conflict'] = v1.conflict;
  const out: Record<string, unknown> = {
    id: entry.id,
    mergeQueueId: queue.id,
    state: V2_ENTRY_STATES[entry.state],
    stateChangedAt: isoTime(entry.stateChangedAt),
    priorityValue: entry.priority.value,
    priorityName: entry.priority.name,
  };
  if (entry.priority.usedDefaultName) out.usedDefaultPriorityName = entry.priority.name;
  out.skipsTheLine = entry.priority.value === 0;
  out.allowBatching = !entry.noBatch;
  out.direct = entry.direct === true;
  if (entry.state === 'merged' && entry.testRunId !== null) out.verifiedByVerificationRunId = entry.testRunId;
  out.readiness = readiness;
  if (entry.reason !== null) out['x-railyard-stateReason'] = entry.reason;
  if (entry.testRunId !== null) out['x-railyard-testRunId'] = entry.testRunId;
  out['x-railyard-enqueuedAt'] = isoTime(entry.submittedAt);
  if (entry.riskEstimate !== null && entry.riskEstimate !== undefined)
    out['x-railyard-riskEstimate'] = entry.riskEstimate;
  out.createdAt = isoTime(firstSubmission(queue.model, entry.prNumber));
  out.updatedAt = isoTime(entry.stateChangedAt);
  return out;
}

function firstSubmission(model: QueueModel, prNumber: number): number {
  let first = Infinity;
  for (const e of model.entries) if (e.prNumber === prNumber) first = Math.min(first, e.submittedAt);
  return first;
}

/** A PR with an entry in `queue` (its current one: the live entry, else the latest) as Trunk's PullRequest. */
export function presentPullRequest(queue: QueueHandle, prNumber: number, links: Links, single = true) {
  const entry = findEntry(queue.model, prNumber);
  if (!entry) throw new Error(`presentPullRequest: #${prNumber} has no entry`);
  const pr = entry.pr;
  return {
    id: pullRequestId(queue.org, queue.repo, prNumber),
    repositoryId: repositoryId(queue.org, queue.repo),
    number: prNumber,
    title: pr.title,
    branch: pr.headBranch,
    sha: pr.headSha,
    baseBranch: pr.baseBranch,
    author: pr.author,
    url: links.pr(queue.repo, queue.model.branch, prNumber),
    state: entry.state === 'merged' ? 'merged' : pr.open ? 'open' : 'closed',
    isCurrentlySubmittedToQueue: !isTerminal(entry.state),
    queueEntry: presentEntry(queue, entry, single),
    createdAt: isoTime(firstSubmission(queue.model, prNumber)),
  };
}
