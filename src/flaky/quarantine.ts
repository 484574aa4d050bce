/** Quarantine: whether a test's failure is ignored, from its status, its override and the repository's settings. */
import type { RepositorySettings, TestStatus } from '../contract/index.js';

/** A test's own quarantine setting; null leaves it to the repository's settings. */
export type QuarantineOverride = 'ALWAYS_QUARANTINE' | 'NEVER_QUARANTINE';

/** One way a test is quarantined: it carries this override and, if `flakyOnly`, is flaky now. */
export interface QuarantineMatch {
  override: 'ALWAYS_QUARANTINE' | null;
  flakyOnly: boolean;
}

/**
 * The quarantine rule, written once: with quarantining enabled, a test is quarantined when it is
 * overridden ALWAYS_QUARANTINE, or has no override and is flaky while auto-quarantine is on.
 * NEVER_QUARANTINE (and a broken test) never matches. `isQuarantined` reads a test against these
 * matches; the store turns the same matches into the query of the quarantined tests.
 */
export function quarantineMatches(
  settings: Pick<RepositorySettings, 'quarantining_enabled' | 'auto_quarantine_flaky'>,
): QuarantineMatch[] {
  if (!settings.quarantining_enabled) return [];
  const matches: QuarantineMatch[] = [{ override: 'ALWAYS_QUARANTINE', flakyOnly: false }];
  if (settings.auto_quarantine_flaky) matches.push({ override: null, flakyOnly: true });
  return matches;
}

/**
 * The override in force at `now`: an override whose end (`until`) has come lapses by itself, and
 * the repository's settings decide again, as if it were AUTO. Every reader of a test's override
 * (the answers, the merge queue's flakyPolicy, the quarantine list's query) goes by this.
 */
export function overrideAt(
  row: { override: QuarantineOverride | null; override_until: number | null },
  now: number,
): QuarantineOverride | null {
  if (row.override === null) return null;
  return row.override_until !== null && row.override_until <= now ? null : row.override;
}

export function isQuarantined(
  matches: readonly QuarantineMatch[],
  override: QuarantineOverride | null,
  status: TestStatus,
): boolean {
  return matches.some((m) => m.override === override && (!m.flakyOnly || status === 'flaky'));
}

/**
 * What the API and the CLI say when a test is set ALWAYS_QUARANTINE while quarantining is off for
 * its repository: the override is kept but does nothing until it is turned on, and how to.
 */
export function quarantiningOffWarning(repo: string): string {
  return (
    `quarantining is off for ${repo}: the test is not quarantined (the queue and \`railyard flaky run\` ignore the override) until it is turned on: ` +
    `railyard flaky settings --repo ${repo} --quarantining on (API: updateRepositorySettings with settings.quarantining_enabled true)`
  );
}
