/** A queue's settings and enqueued PRs as rows for `railyard mq queue get` and `list`. */
import type { GetQueueResponse, QueueSettings } from '../contract/index.js';

/** The settings of a queue as key/value rows (enqueued PRs are rendered separately). */
export function settingsRecord(queue: QueueSettings | GetQueueResponse): Record<string, unknown> {
  const { enqueuedPullRequests: _omit, ...settings } = queue as GetQueueResponse;
  return { ...settings, requiredStatuses: settings.requiredStatuses ?? '(from the repository)' };
}
