/** Stored tests as the flaky-test answers show them (status at a time, rates, failure groups). */
import {
  isoTime,
  type DetailedTestCase,
  type ExcludedUpload,
  type QuarantinedTest,
  type QuarantineOverrideInfo,
  type UnhealthyTestCase,
} from '../../contract/index.js';
import { effectiveStatus, verdictOf, type EffectiveStatus, type VerdictInput } from '../../flaky/detect.js';
import { isQuarantined, overrideAt } from '../../flaky/quarantine.js';
import type { CaseRow, ExcludedUploadRow, FailureGroup, RecentRates } from '../../store/flaky.js';
import type { Links } from '../links.js';
import type { Repository } from './repositories.js';

const TOP_FAILURES = 5;

/** A stored test's status at `now`. */
export function statusOf(row: CaseRow, now: number): EffectiveStatus {
  return effectiveStatus(
    {
      rateStatus: row.rate_status,
      rateReason: row.rate_reason,
      rateChangedAt: row.rate_changed_at,
      porUntil: row.por_until,
      porReason: row.por_reason,
      porSince: row.por_since,
      firstSeenAt: row.first_seen_at,
    },
    now,
  );
}

function ticketUrl(repository: Repository, ticket: string): string {
  // Opened by Railyard (src/server/tickets): the tracker's address of the ticket itself.
  if (/^https?:\/\//i.test(ticket)) return ticket;
  const { host, owner, name } = repository.repo;
  return repository.settings.ticket_url_template
    .replaceAll('{host}', host)
    .replaceAll('{owner}', owner)
    .replaceAll('{name}', name)
    .replaceAll('{id}', encodeURIComponent(ticket));
}

/** A test's own quarantine setting as the answers show it (null without one): owner, reason, end, time left. */
export function overrideInfo(row: CaseRow, now: number): QuarantineOverrideInfo | null {
  if (row.override === null) return null;
  const until = row.override_until;
  return {
    setting: row.override,
    owner: row.override_owner,
    reason: row.override_reason,
    set_at: row.override_at === null ? null : isoTime(row.override_at),
    until: until === null ? null : isoTime(until),
    seconds_left: until === null ? null : Math.max(0, Math.floor((until - now) / 1000)),
    expired: until !== null && until <= now,
  };
}

/** What the verdict of a test needs besides its stored row (counted by the caller for a page of tests). */
export type VerdictCounts = Pick<VerdictInput, 'window' | 'failures7d' | 'passedOnRetry7d'>;

export function unhealthyCase(
  links: Links,
  repository: Repository,
  row: CaseRow,
  prsImpacted: number,
  now: number,
  counts: VerdictCounts,
): UnhealthyTestCase {
  const status = statusOf(row, now);
  const passOnRetryActive = row.por_until !== null && row.por_until > now;
  const test: UnhealthyTestCase = {
    id: row.id,
    repository: { html_url: links.repository(repository.repo) },
    html_url: links.test(repository.repo, row),
    name: row.name,
    variant: row.variant,
    status: { value: status.value, reason: status.reason, timestamp: isoTime(status.since) },
    codeowners: repository.codeowners?.ownersOf(row.file) ?? [],
    pull_requests_impacted_last_7d: prsImpacted,
    quarantined: isQuarantined(repository.quarantine, overrideAt(row, now), status.value),
    verdict: verdictOf({ status: status.value, passOnRetryActive, ...counts }, repository.settings),
  };
  const override = overrideInfo(row, now);
  if (override) test.quarantine_override = override;
  if (row.file) test.file_path = row.file;
  if (row.parent) test.parent = row.parent;
  if (row.classname) test.classname = row.classname;
  if (row.ticket) test.ticket = { html_url: ticketUrl(repository, row.ticket) };
  return test;
}

const ratio = (fails: number, runs: number) => (runs ? Math.round((fails / runs) * 10_000) / 10_000 : 0);

/** An unhealthy test with its rates and its most common failures (at most five, most frequent first). */
export function detailedCase(
  test: UnhealthyTestCase,
  rates: RecentRates | undefined,
  failures: readonly FailureGroup[],
): DetailedTestCase {
  const r = rates ?? { runs7: 0, fails7: 0, runs1: 0, fails1: 0 };
  const top = failures
    .map((f) => ({ summary: f.key, occurrence_count: f.count, last_occurrence: isoTime(f.last) }))
    .sort(
      (a, b) =>
        b.occurrence_count - a.occurrence_count ||
        (b.last_occurrence ?? '').localeCompare(a.last_occurrence ?? ''),
    )
    .slice(0, TOP_FAILURES);
  return {
    ...test,
    most_common_failures: top,
    failure_rate_last_7d: ratio(r.fails7, r.runs7),
    failure_rate_last_24h: ratio(r.fails1, r.runs1),
  };
}

export function quarantinedTest(repository: Repository, row: CaseRow, now: number): QuarantinedTest {
  const status = statusOf(row, now);
  const always = overrideAt(row, now) === 'ALWAYS_QUARANTINE';
  const override = always ? overrideInfo(row, now) : null;
  return {
    name: row.name,
    parent: row.parent,
    file: row.file,
    classname: row.classname,
    status: status.value === 'flaky' ? 'FLAKY' : status.value === 'broken' ? 'BROKEN' : 'HEALTHY',
    codeowners: repository.codeowners?.ownersOf(row.file) ?? [],
    quarantine_setting: always ? 'ALWAYS_QUARANTINE' : 'AUTO_QUARANTINE',
    quarantined_at: isoTime(always && row.override_at !== null ? row.override_at : status.since),
    status_last_updated_at: isoTime(status.since),
    test_case_id: row.id,
    variant: row.variant,
    quarantine_owner: override?.owner ?? null,
    quarantine_reason: override?.reason ?? null,
    quarantined_until: override?.until ?? null,
    seconds_left: override?.seconds_left ?? null,
  };
}

/** An upload kept out of detection as a test's history shows it: where it ran, how much of it failed, the test's result. */
export function excludedUpload(row: ExcludedUploadRow): ExcludedUpload {
  let counts: { tests?: unknown; failed?: unknown } = {};
  try {
    counts = JSON.parse(row.counts) as typeof counts;
  } catch {
    // Counts written by an older server that could not be read: shown as zero.
  }
  const count = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : 0);
  return {
    upload_id: row.id,
    started_at: isoTime(row.startedAt),
    branch: row.branch,
    sha: row.sha,
    job: row.job,
    pr_number: row.prNumber,
    tests: count(counts.tests),
    failed: count(counts.failed),
    outcome: row.outcome === 'failed' || row.outcome === 'flaky' ? row.outcome : 'passed',
  };
}
