/**
 * The verdict on a test commit from its GitLab commit statuses (pipeline jobs and external
 * statuses, latest per name): success when every counted status passed and at least one exists,
 * failure as soon as a counted one failed, else pending. With `requiredStatuses`, only those names
 * count and each must be there; the queue's own `railyard/merge-queue` never counts. A job allowed
 * to fail does not fail the commit.
 */
import type { ChecksRead } from '../shared/ci-wait.js';
import { QUEUE_STATUS_NAME } from './source.js';

export interface GitLabStatus {
  id: number;
  name: string;
  /** created, waiting_for_resource, preparing, pending, running, success, failed, canceled, skipped, manual, scheduled */
  status: string;
  allow_failure?: boolean;
}

export type CiVerdict = ChecksRead;

function outcomeOf(s: GitLabStatus): 'success' | 'failure' | 'pending' {
  if (s.status === 'success' || s.status === 'skipped') return 'success';
  if (s.status === 'failed' || s.status === 'canceled') return s.allow_failure ? 'success' : 'failure';
  return 'pending';
}

export function ciVerdict(statuses: readonly GitLabStatus[], required: readonly string[] | null): CiVerdict {
  // Latest per name (the highest id: a retry is a new status).
  const latest = new Map<string, GitLabStatus>();
  for (const s of statuses) {
    if (s.name === QUEUE_STATUS_NAME) continue;
    const seen = latest.get(s.name);
    if (!seen || s.id > seen.id) latest.set(s.name, s);
  }
  const checks: CiVerdict['checks'] = {};
  const names = required ?? [...latest.keys()];
  // A required name not reported yet is left out (still pending): a timeout names it as never reported.
  for (const name of names) {
    const s = latest.get(name);
    if (s) checks[name] = outcomeOf(s);
  }
  const failed = Object.entries(checks)
    .filter(([, o]) => o === 'failure')
    .map(([n]) => n);
  const anyReported = latest.size > 0;
  if (failed.length)
    return { state: 'failed', checks, anyReported, detail: `failed on GitLab: ${failed.join(', ')}` };
  if (names.length > 0 && names.every((n) => checks[n] === 'success'))
    return { state: 'passed', checks, anyReported };
  return { state: 'pending', checks, anyReported };
}
