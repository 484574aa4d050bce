/**
 * The verdict on a test commit from its GitLab commit statuses (pipeline jobs and external
 * statuses, latest per name): success when every counted status passed and at least one exists,
 * failure as soon as a counted one failed, else pending. With `requiredStatuses`, only those names
 * count and each must be there; the queue's own `railyard/merge-queue` never counts. A job allowed
 * to fail does not fail the commit. A skipped job passes beside others, but a pipeline whose every
 * counted job was skipped is a skipped pipeline: a pass only where the project allows merging on
 * one (`allow_merge_on_skipped_pipeline`). A required manual job (not allowed to fail) fails the
 * commit at once, named: nobody presses play for the queue.
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
  // A manual job allowed to fail is optional (GitLab's default for `when: manual`): not waited for.
  if (s.status === 'manual' && s.allow_failure) return 'success';
  return 'pending';
}

export interface VerdictOptions {
  /** The project's `allow_merge_on_skipped_pipeline` (asked only when every counted job was skipped). */
  allowSkipped?: () => Promise<boolean>;
}

/** The verdict, with what only the project's settings decide (a pipeline that was skipped). */
export async function ciVerdictOf(
  statuses: readonly GitLabStatus[],
  required: readonly string[] | null,
  options: VerdictOptions = {},
): Promise<CiVerdict> {
  const v = ciVerdict(statuses, required);
  if (v.state !== 'skipped') return { ...v, state: v.state };
  if (options.allowSkipped && (await options.allowSkipped())) return { ...v, state: 'passed' };
  return {
    ...v,
    state: 'failed',
    detail: `the pipeline was skipped on GitLab (${Object.keys(v.checks).join(', ')} skipped): nothing was tested, and the project does not allow merging on a skipped pipeline (allow_merge_on_skipped_pipeline)`,
  };
}

export function ciVerdict(
  statuses: readonly GitLabStatus[],
  required: readonly string[] | null,
): Omit<CiVerdict, 'state'> & { state: CiVerdict['state'] | 'skipped' } {
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
  const manual = names.filter((n) => latest.get(n)?.status === 'manual' && checks[n] === 'pending');
  if (manual.length)
    return {
      state: 'failed',
      // Not "still running": it never runs without someone pressing play.
      checks: { ...checks, ...Object.fromEntries(manual.map((n) => [n, 'failure' as const])) },
      anyReported,
      detail: `waits on the manual ${manual.length === 1 ? 'job' : 'jobs'} ${manual.join(', ')} on GitLab: the queue cannot start a manual job (make it run by itself, or allow it to fail)`,
    };
  if (names.length > 0 && names.every((n) => checks[n] === 'success'))
    return names.every((n) => latest.get(n)?.status === 'skipped')
      ? { state: 'skipped', checks, anyReported }
      : { state: 'passed', checks, anyReported };
  return { state: 'pending', checks, anyReported };
}
