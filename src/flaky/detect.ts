/** Flaky-test detection: the failure-rate and pass-on-retry monitors, pure decisions over a test's results. */
import type { RepositorySettings, TestStatus } from '../contract/index.js';

/**
 * Flaky-test detection: two monitors per test (docs/decisions.md, "Flaky-test detection").
 *
 * - Pass-on-retry: the test passed and failed on the same commit (in one upload through
 *   retries, or across uploads of the same SHA, on any branch). Active until
 *   `recovery_days` pass without new evidence.
 * - Failure rate on stable branches (main, master, develop and merge-queue branches by
 *   default): over the last `window_hours`, with at least `min_sample` runs, a rate at or above
 *   `broken_threshold` is broken, at or above `flaky_activation` flaky; once flaky it stays
 *   flaky until the rate falls below `flaky_resolution` (hysteresis). Fewer runs than the
 *   minimum sample change nothing.
 *
 * A test's status is the most severe active monitor: broken > flaky > healthy. These functions
 * are pure; the server feeds them counts from the store.
 */

export const DEFAULT_SETTINGS: RepositorySettings = {
  quarantining_enabled: false,
  auto_quarantine_flaky: true,
  pass_on_retry: { enabled: true, recovery_days: 7 },
  failure_rate: {
    enabled: true,
    branches: ['main', 'master', 'develop', 'railyard-merge/*', 'trunk-merge/*', 'gh-readonly-queue/*'],
    window_hours: 72,
    min_sample: 10,
    flaky_activation: 0.2,
    flaky_resolution: 0.1,
    broken_threshold: 0.8,
  },
  infra_failure_threshold: 0.8,
  infra_failure_min_tests: 10,
  ticket_url_template: 'https://{host}/{owner}/{name}/issues/{id}',
  ticket_system: 'off',
  ticket_project: '',
};

const SEVERITY: Record<TestStatus, number> = { healthy: 0, flaky: 1, broken: 2 };

export function mostSevere(a: TestStatus, b: TestStatus): TestStatus {
  return SEVERITY[a] >= SEVERITY[b] ? a : b;
}

/** Branch globs: `*` is any run of characters (including `/`), `?` one character, the rest literal. */
export function branchMatcher(globs: readonly string[]): (branch: string) => boolean {
  const patterns = globs.map((glob) => {
    const source = glob
      .replace(/\*+/g, '*')
      .split('')
      .map((ch) => (ch === '*' ? '.*' : ch === '?' ? '.' : ch.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
      .join('');
    return new RegExp(`^${source}$`);
  });
  return (branch) => patterns.some((p) => p.test(branch));
}

/** The failure-rate monitor's next state from the runs in its window. */
export function rateStatus(
  current: TestStatus,
  runs: number,
  failures: number,
  settings: RepositorySettings['failure_rate'],
): TestStatus {
  if (!settings.enabled) return 'healthy';
  if (runs < settings.min_sample || runs === 0) return current;
  const rate = failures / runs;
  if (rate >= settings.broken_threshold) return 'broken';
  if (rate >= settings.flaky_activation) return 'flaky';
  if (current !== 'healthy' && rate >= settings.flaky_resolution) return 'flaky';
  return 'healthy';
}

export function percent(rate: number): string {
  return `${Math.round(rate * 1000) / 10}%`;
}

/** The human-readable reason of a failure-rate status. */
export function rateReason(
  status: TestStatus,
  runs: number,
  failures: number,
  settings: RepositorySettings['failure_rate'],
): string {
  const rate = runs ? failures / runs : 0;
  const seen = `${failures} of ${runs} runs (${percent(rate)}) failed on stable branches in the last ${settings.window_hours} h`;
  if (status === 'broken')
    return `${seen}: at or above the broken threshold ${percent(settings.broken_threshold)}`;
  if (status === 'flaky')
    return `${seen}: flaky (activates at ${percent(settings.flaky_activation)}, resolves below ${percent(settings.flaky_resolution)})`;
  return `${seen}: below ${percent(settings.flaky_resolution)}`;
}

export function passOnRetryReason(sha: string, branch: string): string {
  return `Inconsistent results on the same commit ${sha.slice(0, 7)} on ${branch}`;
}

/** What the stored monitor columns of a test mean at time `now`. */
export interface MonitorState {
  rateStatus: TestStatus;
  rateReason: string | null;
  rateChangedAt: number | null;
  /** Pass-on-retry is active until this time (epoch ms), or null if it never fired. */
  porUntil: number | null;
  porReason: string | null;
  porSince: number | null;
  firstSeenAt: number;
}

export interface EffectiveStatus {
  value: TestStatus;
  reason: string;
  since: number;
}

/** The status a test has at `now`: the most severe active monitor, with its reason and start time. */
export function effectiveStatus(m: MonitorState, now: number): EffectiveStatus {
  const porActive = m.porUntil !== null && m.porUntil > now;
  if (m.rateStatus === 'broken')
    return { value: 'broken', reason: m.rateReason ?? 'broken', since: m.rateChangedAt ?? m.firstSeenAt };
  if (porActive)
    return {
      value: 'flaky',
      reason: m.porReason ?? 'passed and failed on the same commit',
      since: m.porSince ?? m.firstSeenAt,
    };
  if (m.rateStatus === 'flaky')
    return { value: 'flaky', reason: m.rateReason ?? 'flaky', since: m.rateChangedAt ?? m.firstSeenAt };
  // Healthy: since the later of the last monitor resolving and the first sighting.
  const porResolved = m.porUntil !== null ? m.porUntil : 0;
  const rateResolved = m.rateChangedAt ?? 0;
  if (porResolved > rateResolved && porResolved > m.firstSeenAt) {
    return {
      value: 'healthy',
      reason: 'No inconsistent results on the same commit since the recovery period began',
      since: porResolved,
    };
  }
  if (rateResolved > m.firstSeenAt)
    return { value: 'healthy', reason: m.rateReason ?? 'failure rate back to normal', since: rateResolved };
  return { value: 'healthy', reason: 'No problems detected', since: m.firstSeenAt };
}

const DAY = 24 * 60 * 60 * 1000;

/** What the monitors of one test had decided before an upload. */
export interface MonitorsBefore {
  rateStatus: TestStatus;
  /** Pass-on-retry is active until this time (epoch ms), or null if it never fired. */
  porUntil: number | null;
}

/** What one upload found about one test. */
export interface MonitorEvidence {
  /** The time of the test's result in this upload. */
  at: number;
  /** It passed and failed on the same commit (pass-on-retry evidence). */
  passedAndFailed: boolean;
  /** Its runs and failures on stable branches in the window ending at this upload, if counted. */
  rate?: { runs: number; fails: number };
  /** The commit and branch of the upload (for the reason). */
  sha: string;
  branch: string;
}

/** The monitor fields that change (only the keys present); empty when nothing does. */
export interface MonitorDecision {
  porSince?: number;
  porUntil?: number;
  porReason?: string;
  rateStatus?: TestStatus;
  rateChangedAt?: number;
  rateReason?: string;
}

/**
 * The monitors' decision for one test after one upload, pure: pass-on-retry evidence starts the
 * monitor (or extends it to `recovery_days` after this result); the failure rate moves the
 * failure-rate monitor through `rateStatus` (with its hysteresis), and an active monitor's reason
 * keeps the current figures.
 */
export function decideMonitors(
  before: MonitorsBefore,
  evidence: MonitorEvidence,
  settings: RepositorySettings,
): MonitorDecision {
  const decision: MonitorDecision = {};
  const { at } = evidence;
  if (evidence.passedAndFailed) {
    const until = at + settings.pass_on_retry.recovery_days * DAY;
    const active = before.porUntil !== null && before.porUntil > at;
    if (!active) {
      decision.porSince = at;
      decision.porReason = passOnRetryReason(evidence.sha, evidence.branch);
    }
    if (before.porUntil === null || before.porUntil < until) decision.porUntil = until;
  }
  const { rate } = evidence;
  if (rate) {
    const fr = settings.failure_rate;
    const next = rateStatus(before.rateStatus, rate.runs, rate.fails, fr);
    if (next !== before.rateStatus) {
      decision.rateStatus = next;
      decision.rateChangedAt = at;
      decision.rateReason = rateReason(next, rate.runs, rate.fails, fr);
    } else if (next !== 'healthy' && rate.runs >= fr.min_sample) {
      // Keep the figures of an active monitor current.
      decision.rateReason = rateReason(next, rate.runs, rate.fails, fr);
    }
  }
  return decision;
}

/** What a test's view shows and why (the `verdict` extension of the test answers). */
export interface VerdictInput {
  /** Its effective status now, and whether pass-on-retry is what makes it flaky. */
  status: TestStatus;
  passOnRetryActive: boolean;
  /** The failure-rate monitor's runs and failures now (stable branches, its window). */
  window: { runs: number; fails: number };
  /** Its failures anywhere in the last 7 days, and how many a pass on the same commit followed. */
  failures7d: number;
  passedOnRetry7d: number;
}

export interface Verdict {
  kind: 'healthy' | 'not_enough_runs' | 'failure_rate' | 'pass_on_retry';
  label: string;
  runs: number;
  failures: number;
  min_runs: number;
  window_hours: number;
  failures_passed_on_retry_last_7d: number;
}

/**
 * The verdict behind a status, pure. A healthy test that has failed (in the monitor's window or in
 * the last 7 days) while the failure-rate monitor has fewer runs than its minimum sample has no
 * verdict yet: `not enough runs yet (3 of 10)`, never "healthy". A test flaky by pass-on-retry
 * (and not broken) says so.
 */
export function verdictOf(input: VerdictInput, settings: RepositorySettings): Verdict {
  const fr = settings.failure_rate;
  const base = {
    runs: input.window.runs,
    failures: input.window.fails,
    min_runs: fr.min_sample,
    window_hours: fr.window_hours,
    failures_passed_on_retry_last_7d: input.passedOnRetry7d,
  };
  if (input.status === 'broken') return { kind: 'failure_rate', label: 'broken', ...base };
  if (input.status === 'flaky') {
    return input.passOnRetryActive
      ? { kind: 'pass_on_retry', label: 'flaky: passed on retry', ...base }
      : { kind: 'failure_rate', label: 'flaky', ...base };
  }
  const failed = input.window.fails > 0 || input.failures7d > 0;
  if (fr.enabled && failed && input.window.runs < fr.min_sample) {
    return { kind: 'not_enough_runs', label: `not enough runs yet (${input.window.runs} of ${fr.min_sample})`, ...base };
  }
  return { kind: 'healthy', label: 'healthy', ...base };
}
