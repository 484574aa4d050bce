/** The Action's job summary tables (a PR's state, an upload's figures) and durations as people read them. */
import type { SubmittedPullRequest } from '../contract/index.js';

export interface SummaryFacts {
  operation: string;
  repo: string;
  targetBranch: string;
  pr: SubmittedPullRequest | null;
  prNumber: number | null;
  /** Test branch of the current run and a link to it, when there is one. */
  testBranch?: { name: string; url: string } | null;
  note?: string;
  now: number;
}

/** "3m 20s", "1h 5m", "12s": how long a PR has been in its state. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${seconds % 60}s`;
  const hours = Math.floor(minutes / 60);
  return `${hours}h ${minutes % 60}m`;
}

export interface SummaryTable {
  heading: string;
  rows: string[][];
  link: { text: string; url: string } | null;
  note: string | null;
}

/** The job summary: a heading and a two-row table (header + the PR), plus a link to the test branch. */
export function summaryTable(facts: SummaryFacts): SummaryTable {
  const pr = facts.pr;
  const state = pr?.state ?? 'unknown';
  const reason = pr?.stateReason ? ` (${pr.stateReason})` : '';
  const since = pr ? formatDuration(facts.now - Date.parse(pr.stateChangedAt)) : '';
  return {
    heading: `Merge queue: ${facts.operation} #${facts.prNumber ?? '?'} → ${facts.targetBranch}`,
    rows: [
      ['Pull request', 'Repository', 'State', 'Priority', 'Time in state'],
      [
        pr ? `#${pr.prNumber} ${pr.prTitle}` : `#${facts.prNumber ?? '?'}`,
        facts.repo,
        `${state}${reason}`,
        pr ? `${pr.priorityName} (${pr.priorityValue})` : '',
        since,
      ],
    ],
    link: facts.testBranch ? { text: `Test branch ${facts.testBranch.name}`, url: facts.testBranch.url } : null,
    note: facts.note ?? null,
  };
}

/** The job summary of upload-tests: the counts the server answered. */
export function uploadSummaryTable(facts: {
  repo: string;
  upload: { files: number; tests: number; passed: number; failed: number; flaky: number; skipped: number; new_tests: number; excluded_from_detection: boolean } | null;
  note?: string;
}): Omit<SummaryTable, 'link'> {
  const u = facts.upload;
  const notes = [facts.note, u?.excluded_from_detection ? 'Kept out of flaky-test detection: most tests failed, which looks like an infrastructure failure.' : undefined];
  return {
    heading: `Test results: ${u ? `${u.tests} test(s) uploaded` : 'not uploaded'} for ${facts.repo}`,
    rows: u
      ? [
          ['Files', 'Tests', 'Passed', 'Failed', 'Flaky', 'Skipped', 'New'],
          [u.files, u.tests, u.passed, u.failed, u.flaky, u.skipped, u.new_tests].map(String),
        ]
      : [],
    note: notes.filter(Boolean).join('\n\n') || null,
  };
}
