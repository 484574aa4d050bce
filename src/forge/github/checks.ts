/**
 * The CI verdict on a GitHub test commit from its check runs and commit statuses (latest per name;
 * Railyard's own status never counts).
 */
import type { CheckOutcome, ChecksRead } from '../shared/ci-wait.js';

/** Railyard's own commit status on PR heads; never counted as CI. */
export const QUEUE_STATUS_CONTEXT = 'railyard/merge-queue';

/** A check run as `GET commits/{ref}/check-runs` (or a check_run webhook) reports it. */
export interface CheckRunLike {
  id: number;
  name: string;
  status: string;
  conclusion?: string | null;
  started_at?: string | null;
}

/** One commit status as `GET commits/{ref}/status` reports it (latest per context). */
export interface StatusLike {
  id?: number;
  context: string;
  state: string;
}

export type { CheckOutcome };
/** The verdict on a test commit (the shape the shared CI role reads). */
export type CiVerdict = ChecksRead;

const PASSING = new Set(['success', 'neutral', 'skipped']);

function runOutcome(run: CheckRunLike): CheckOutcome {
  if (run.status !== 'completed') return 'pending';
  return PASSING.has(run.conclusion ?? '') ? 'success' : 'failure';
}

function statusOutcome(s: StatusLike): CheckOutcome {
  if (s.state === 'success') return 'success';
  if (s.state === 'pending') return 'pending';
  return 'failure';
}

/**
 * The CI verdict on a test commit (docs/decisions.md "GitHub forge: PR facts and required statuses"). Per name the latest check
 * run counts (a re-run replaces the earlier result). With `required`, the run passes when each
 * required name succeeded and fails when each has completed and one did not; names not reported
 * yet keep it pending. Without, every reported check (Railyard's own status excepted) must have
 * completed successfully, and at least one must exist. Nothing is decided while a check that
 * counts is still running: a failed check re-run green before the others finish counts as green.
 */
export function ciVerdict(
  runs: readonly CheckRunLike[],
  statuses: readonly StatusLike[],
  required: readonly string[] | null,
): CiVerdict {
  const latest = new Map<string, CheckRunLike>();
  for (const r of runs) {
    const prev = latest.get(r.name);
    if (!prev || r.id > prev.id) latest.set(r.name, r);
  }
  const checks: Record<string, CheckOutcome> = {};
  for (const [name, r] of latest) checks[name] = runOutcome(r);
  for (const s of statuses) {
    if (s.context === QUEUE_STATUS_CONTEXT) continue;
    const o = statusOutcome(s);
    // A name reported both ways: a failure or a pending on either side wins over success.
    const prev = checks[s.context];
    checks[s.context] =
      prev === undefined || prev === 'success'
        ? o
        : prev === 'pending'
          ? o === 'failure'
            ? 'failure'
            : 'pending'
          : prev;
  }
  const anyReported = Object.keys(checks).length > 0;
  const counted = required === null ? Object.keys(checks) : [...new Set(required)];
  const outcomes = counted.map((n) => checks[n]);
  let state: CiVerdict['state'] = 'pending';
  if (counted.length > 0 && outcomes.every((o) => o !== undefined && o !== 'pending')) {
    state = outcomes.every((o) => o === 'success') ? 'passed' : 'failed';
  }
  return { state, checks, anyReported };
}
