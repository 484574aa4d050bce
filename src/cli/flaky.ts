/** What the `railyard flaky` commands share: flags, the organisation, table columns, following pages, output. */
import { writeFile } from 'node:fs/promises';
import { Flags } from '@oclif/core';
import type { DetailedTestCase, QuarantinedTest, UnhealthyTestCase } from '../contract/index.js';
import { ConfigError } from './config.js';
import { forTerminal } from './escape.js';
import { Progress } from './progress.js';
import { stateText, type Column } from './render.js';

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

export const quarantinedColumns: Column<QuarantinedTest>[] = [
  { header: 'Test', get: (t) => t.name },
  { header: 'Status', get: (t) => stateText(t.status) },
  { header: 'Setting', get: (t) => t.quarantine_setting, drop: 3 },
  { header: 'Since', get: (t) => t.quarantined_at, time: true },
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
