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

export function isQuarantined(
  matches: readonly QuarantineMatch[],
  override: QuarantineOverride | null,
  status: TestStatus,
): boolean {
  return matches.some((m) => m.override === override && (!m.flakyOnly || status === 'flaky'));
}
