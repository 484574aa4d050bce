/** Queues and PRs as the merge-queue answers show them (settings, list items, submitted PRs). */
import {
  isoTime,
  QueueSettings,
  type QueueListItem,
  type Readiness,
  type SubmittedPullRequest,
} from '../../contract/index.js';
import {
  activeFreeze,
  inTestingMinutes,
  isTerminal,
  stackOf,
  stackSentence,
  testingTimeoutMs,
} from '../../engine/index.js';
import type { Entry, QueueConfig, QueueModel } from '../../engine/types.js';

const SETTINGS_KEYS = Object.keys(QueueSettings.shape) as (keyof QueueSettings)[];

/** Every setting but `branch` (the queue's own name) is a field of the queue's config, of the same type. */
function copySetting<
  K extends Exclude<keyof QueueSettings, 'branch' | 'frozen' | 'testingTimeoutMinutesNow'>,
>(out: Partial<QueueSettings>, config: QueueConfig, key: K): void {
  out[key] = config[key];
}

/** The contract's queue object (without enqueuedPullRequests), exactly its keys; `frozen` as of `now`. */
export function presentQueueSettings(model: QueueModel, now = Date.now()): QueueSettings {
  const out: Partial<QueueSettings> = {};
  for (const key of SETTINGS_KEYS) {
    if (key === 'branch') out.branch = model.branch;
    else if (key !== 'frozen' && key !== 'testingTimeoutMinutesNow') copySetting(out, model.config, key);
  }
  if (model.config.testingTimeoutMinutes === 'auto')
    out.testingTimeoutMinutesNow = inTestingMinutes(testingTimeoutMs(model.config));
  const freeze = activeFreeze(model.config.freezes, now);
  if (freeze)
    out.frozen = { until: isoTime(freeze.until), ...(freeze.reason ? { reason: freeze.reason } : {}) };
  return out as QueueSettings;
}

/**
 * The fields every presentation of an entry starts with, in wire order. Callers add their own
 * fields to this same object: a spread copy (`{ ...core(entry), x }`) costs microseconds per
 * object and leaves one that JSON.stringify serialises more slowly, on every read of a PR.
 */
function core(entry: Entry) {
  const out: Omit<QueueListItem, 'noBatch'> = {
    id: entry.id,
    state: entry.state,
    stateChangedAt: isoTime(entry.stateChangedAt),
    priorityValue: entry.priority.value,
    priorityName: entry.priority.name,
    skipTheLine: entry.priority.skipTheLine,
    prNumber: entry.prNumber,
    prTitle: entry.pr.title,
    prSha: entry.pr.headSha,
    prBaseBranch: entry.pr.baseBranch,
    prAuthor: entry.pr.author,
  };
  if (entry.priority.usedDefaultName) out.usedDefaultPriorityName = entry.priority.name;
  if (entry.reason !== null) out.stateReason = entry.reason;
  if (entry.testRunId !== null) out.testRunId = entry.testRunId;
  out.enqueuedAt = isoTime(entry.submittedAt);
  if (entry.direct) out.direct = true;
  if (entry.riskEstimate !== null && entry.riskEstimate !== undefined) out.riskEstimate = entry.riskEstimate;
  return out;
}

/** An item of getQueue.enqueuedPullRequests and listPullRequests.pullRequests. */
export function presentListItem(entry: Entry, lane?: number): QueueListItem {
  const out = core(entry) as QueueListItem;
  out.noBatch = entry.noBatch;
  if (lane !== undefined) out.lane = lane;
  return out;
}

/** The getSubmittedPullRequest answer (`model`: the queue, for the PR's stack). */
export function presentSubmitted(
  entry: Entry,
  readiness: Readiness,
  model?: QueueModel,
): SubmittedPullRequest {
  const out = core(entry) as SubmittedPullRequest;
  const stack = model ? stackOf(model, entry) : [];
  if (stack.length) out.stack = { prNumbers: stack, description: stackSentence(stack) };
  out.readiness = readiness;
  out.forceEnqueued = false;
  out.isCurrentlySubmittedToQueue = !isTerminal(entry.state);
  return out;
}
