/** What the `railyard flaky` commands share: flags, the organisation, table columns, following pages, output. */
import { writeFile } from 'node:fs/promises';
import { Flags } from '@oclif/core';
import type {
  DetailedTestCase,
  ExcludedUpload,
  GetTestFailureHistoryResponse,
  QuarantinedTest,
  QuarantineOverrideInfo,
  UnhealthyTestCase,
} from '../contract/index.js';
import { ConfigError } from './config.js';
import { forTerminal } from './escape.js';
import { Progress } from './progress.js';
import { timeLeft } from '../flaky/time-left.js';
import { localTime, stateText, type Column } from './render.js';

export const flakyFlags = {
  org: Flags.string({ description: 'organisation slug [env: RAILYARD_ORG]' }),
  output: Flags.string({ description: 'write to this file instead of stdout' }),
};

export async function resolveOrg(flag: string | undefined, config: { org?: string }): Promise<string> {
  const org = flag || process.env.RAILYARD_ORG || config.org;
  if (!org) throw new ConfigError('--org: required (or set RAILYARD_ORG, or `railyard config set org SLUG`)');
  return org;
}

/**
 * What a view says for a test's status: the server's verdict label when it sends one (`not enough
 * runs yet (3 of 10)` rather than a healthy that has no verdict yet, `flaky: passed on retry`), else
 * the wire status.
 */
export function statusLabel(t: {
  status: { value: string };
  verdict?: { label: string } | undefined;
}): string {
  return t.verdict?.label ?? stateText(t.status.value);
}

/**
 * The reason a view shows: the monitor's own figures while it has too few runs for a verdict (the
 * wire reason, Trunk's "No problems detected", reads wrong for a test that failed), else the server's.
 */
export function reasonText(t: Pick<DetailedTestCase, 'status' | 'verdict'>): string {
  const v = t.verdict;
  if (v?.kind !== 'not_enough_runs') return t.status.reason;
  const seen = v.runs ? `${v.failures} of ${v.runs} runs failed` : 'no runs';
  return `${seen} on stable branches in the last ${v.window_hours} h: the failure-rate monitor decides from ${v.min_runs} runs`;
}

// On a narrow terminal, reasons and messages are cut first, then files; then the columns with a
// `drop` go, the highest first. The test's name and id (for `flaky show`) are never cut.
export const testColumns: Column<UnhealthyTestCase | DetailedTestCase>[] = [
  { header: 'Test', get: (t) => t.name },
  { header: 'Status', get: statusLabel, shrink: true },
  { header: 'Reason', get: reasonText, plain: (t) => t.status.reason, shrink: 'first', drop: 1 },
  { header: 'File', get: (t) => t.file_path ?? '', shrink: true, drop: 5 },
  { header: 'Class', get: (t) => t.classname ?? '', drop: 10 },
  { header: 'Quarantined', get: (t) => t.quarantined, drop: 7 },
  { header: 'Codeowners', get: (t) => t.codeowners, drop: 9 },
  { header: 'PRs (7d)', get: (t) => t.pull_requests_impacted_last_7d, drop: 8 },
  { header: 'Ticket', get: (t) => t.ticket?.html_url ?? '', drop: 11 },
  { header: 'Id', get: (t) => t.id },
];

export const failingColumns: Column<DetailedTestCase>[] = [
  ...testColumns.slice(0, 4),
  {
    header: 'Fail 7d',
    get: (t) => `${(t.failure_rate_last_7d * 100).toFixed(1)}%`,
    plain: (t) => t.failure_rate_last_7d,
    drop: 2,
  },
  {
    header: 'Fail 24h',
    get: (t) => `${(t.failure_rate_last_24h * 100).toFixed(1)}%`,
    plain: (t) => t.failure_rate_last_24h,
    drop: 4,
  },
  { header: 'Passed on retry', get: (t) => t.verdict?.failures_passed_on_retry_last_7d ?? '', drop: 6 },
  { header: 'Top failure', get: (t) => t.most_common_failures[0]?.summary ?? '', shrink: 'first', drop: 3 },
  ...testColumns.slice(5),
];

/** An override's end for people, with a leading space: ` until 2026-12-24 18:00:00 (2d 4h left)`, ` expired 2026-…`, or nothing without an end. */
export function overrideEnd(o: Pick<QuarantineOverrideInfo, 'until' | 'seconds_left' | 'expired'>): string {
  if (!o.until) return '';
  if (o.expired) return ` expired ${localTime(o.until)}`;
  return ` until ${localTime(o.until)} (${timeLeft(o.seconds_left ?? 0)} left)`;
}

/**
 * A test's own quarantine setting in one line, as `flaky show` says it. `quarantined` is the test's
 * answer: an ALWAYS_QUARANTINE in force on a test that is not quarantined means quarantining is off.
 */
export function overrideText(o: QuarantineOverrideInfo, quarantined: boolean): string {
  const what = o.setting === 'ALWAYS_QUARANTINE' ? 'always quarantined' : 'never quarantined';
  const by = o.owner ? `, set by ${o.owner}` : '';
  const why = o.reason ? `: ${o.reason}` : '';
  const off =
    o.setting === 'ALWAYS_QUARANTINE' && !o.expired && !quarantined
      ? ' (not in force: quarantining is off for the repository; railyard flaky settings --quarantining on)'
      : '';
  return `${what}${o.expired ? ` (lapsed:${overrideEnd(o)}; the repository settings decide)` : overrideEnd(o)}${by}${why}${off}`;
}

/** One upload kept out of detection, in a line: `2026-12-03 10:00:00 main abc1234 job ci: 95 of 100 tests failed (this test failed)`. */
export function excludedUploadText(u: ExcludedUpload): string {
  const where = [
    u.branch,
    u.sha.slice(0, 7),
    u.job ? `job ${u.job}` : '',
    u.pr_number ? `PR #${u.pr_number}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return `${localTime(u.started_at)} ${where}: ${u.failed} of ${u.tests} tests failed (this test ${u.outcome})`;
}

/** A test's history in one line: runs and failures that count, and the runs in uploads excluded from detection. */
export function historyText(h: GetTestFailureHistoryResponse): string {
  const sum = (f: (d: GetTestFailureHistoryResponse['days'][number]) => number) =>
    h.days.reduce((n, d) => n + f(d), 0);
  const runs = sum((d) => d.runs);
  const excluded = sum((d) => d.excluded_runs);
  const base = `${runs} run${runs === 1 ? '' : 's'}, ${sum((d) => d.failures)} failed`;
  if (!h.excluded_uploads_total) return base;
  const uploads = `${h.excluded_uploads_total} upload${h.excluded_uploads_total === 1 ? '' : 's'}`;
  return `${base}; not counted: ${excluded} run${excluded === 1 ? '' : 's'} in ${uploads} excluded from detection (most of their tests failed: an infrastructure failure)`;
}

export const quarantinedColumns: Column<QuarantinedTest>[] = [
  { header: 'Test', get: (t) => t.name },
  { header: 'Status', get: (t) => stateText(t.status) },
  { header: 'Setting', get: (t) => t.quarantine_setting, drop: 3 },
  { header: 'Since', get: (t) => t.quarantined_at, time: true },
  { header: 'Owner', get: (t) => t.quarantine_owner ?? '', drop: 2 },
  {
    header: 'Until',
    get: (t) =>
      t.quarantined_until ? `${localTime(t.quarantined_until)} (${timeLeft(t.seconds_left ?? 0)} left)` : '',
    plain: (t) => t.quarantined_until ?? '',
    drop: 2,
  },
  { header: 'Seconds left', get: (t) => t.seconds_left ?? '', machineOnly: true },
  { header: 'Reason', get: (t) => t.quarantine_reason ?? '', shrink: 'first', drop: 1 },
  { header: 'File', get: (t) => t.file ?? '', shrink: true, drop: 4 },
  { header: 'Class', get: (t) => t.classname ?? '', drop: 6 },
  { header: 'Codeowners', get: (t) => t.codeowners, drop: 5 },
  { header: 'Id', get: (t) => t.test_case_id },
];

/** Follows every page with a progress line on stderr (shown once an export takes a while). */
export async function collectPages<T>(
  pages: (
    onPage: (page: { total_rows: number; total_pages: number }, index: number) => void,
  ) => AsyncIterable<T[]>,
  label: string,
): Promise<T[]> {
  const progress = new Progress(process.stderr, 5_000);
  const started = Date.now();
  const rows: T[] = [];
  try {
    for await (const batch of pages((page, index) => {
      if (Date.now() - started > 500)
        progress.update(
          `${label}: page ${index + 1} of ${Math.max(page.total_pages, 1)}, ${page.total_rows} rows`,
        );
    })) {
      rows.push(...batch);
    }
  } finally {
    progress.stop();
  }
  return rows;
}

/** stdout (on a terminal with its control characters escaped: escape.ts), or --output FILE, exact (then a one-line note on stderr). */
export async function emit(text: string, output: string | undefined, json: boolean): Promise<void> {
  if (output) {
    await writeFile(output, text);
    process.stderr.write(`wrote ${output}\n`);
  } else if (!json) process.stdout.write(process.stdout.isTTY ? forTerminal(text) : text);
}
