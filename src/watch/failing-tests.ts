/**
 * How the failing tests of a merge-queue test run read for people: what the flaky-test
 * data said of each and whether the flake-aware verdict ignored it. Shared by `railyard mq status`,
 * `railyard mq logs` and the dashboard (no oclif, no Node-only modules).
 */
import type { TestingDetailsResponse } from '../contract/index.js';

export type FailingTest = NonNullable<TestingDetailsResponse['failingTests']>[number];

/** `quarantined, changed by the PR, ignored` — what is known of one failing test (empty when nothing). */
export function failingTestNote(t: FailingTest): string {
  const notes: string[] = [];
  if (t.quarantined) notes.push('quarantined');
  else if (t.flaky) notes.push('flaky');
  if (t.changedByPr) notes.push('file changed by the PR');
  if (t.ignored) notes.push('ignored');
  return notes.join(', ');
}

/** `suite › net works (quarantined, ignored)`. */
export function failingTestLine(t: FailingTest): string {
  const note = failingTestNote(t);
  return note ? `${t.name} (${note})` : t.name;
}

/** The first `max` lines joined by `; `, with `and N more` past them; undefined when there are none. */
export function failingTestsSummary(tests: readonly FailingTest[] | undefined, max = 10): string | undefined {
  if (!tests?.length) return undefined;
  const shown = tests.slice(0, max).map(failingTestLine).join('; ');
  return tests.length > max ? `${shown}; and ${tests.length - max} more` : shown;
}
