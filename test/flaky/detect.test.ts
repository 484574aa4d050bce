import { describe, expect, it } from 'vitest';
import type { RepositorySettings } from '../../src/contract/index.js';
import { decideMonitors, DEFAULT_SETTINGS, rateStatus, verdictOf, type MonitorsBefore } from '../../src/flaky/detect.js';
import { isQuarantined, quarantineMatches } from '../../src/flaky/quarantine.js';

// The monitor decision, pure: activation at 20 %, resolution below 10 %, broken at 80 %, at least
// 10 runs (the defaults), and pass-on-retry's 7-day recovery.

const DAY = 86_400_000;
const AT = Date.parse('2026-11-01T00:00:00.000Z');
const FR = DEFAULT_SETTINGS.failure_rate;
const healthy: MonitorsBefore = { rateStatus: 'healthy', porUntil: null };
const flaky: MonitorsBefore = { rateStatus: 'flaky', porUntil: null };

function decide(
  before: MonitorsBefore,
  fails: number,
  runs = 100,
  settings: RepositorySettings = DEFAULT_SETTINGS,
) {
  return decideMonitors(
    before,
    { at: AT, passedAndFailed: false, rate: { runs, fails }, sha: 'abcdef0123', branch: 'main' },
    settings,
  );
}

describe('failure-rate hysteresis', () => {
  it('a healthy test turns flaky at the activation rate, not just below it', () => {
    expect(decide(healthy, 19)).toEqual({});
    const change = decide(healthy, 20);
    expect(change.rateStatus).toBe('flaky');
    expect(change.rateChangedAt).toBe(AT);
    expect(change.rateReason).toBe(
      '20 of 100 runs (20%) failed on stable branches in the last 72 h: flaky (activates at 20%, resolves below 10%)',
    );
  });

  it('between resolution and activation a test keeps its state: flaky stays flaky, healthy stays healthy', () => {
    for (const fails of [10, 15, 19]) {
      expect(decide(healthy, fails), `${fails} %`).toEqual({});
      const change = decide(flaky, fails);
      expect(change.rateStatus, `${fails} %`).toBeUndefined();
      // The active monitor's reason keeps today's figures.
      expect(change.rateReason).toContain(`${fails} of 100 runs`);
    }
  });

  it('a flaky test resolves only below the resolution rate', () => {
    expect(decide(flaky, 10).rateStatus).toBeUndefined();
    const change = decide(flaky, 9);
    expect(change).toEqual({
      rateStatus: 'healthy',
      rateChangedAt: AT,
      rateReason: '9 of 100 runs (9%) failed on stable branches in the last 72 h: below 10%',
    });
  });

  it('the broken threshold wins over flaky, and a broken test falls back to flaky, not healthy, above resolution', () => {
    expect(decide(healthy, 80).rateStatus).toBe('broken');
    expect(decide(flaky, 79).rateStatus).toBeUndefined();
    expect(decide({ rateStatus: 'broken', porUntil: null }, 50).rateStatus).toBe('flaky');
    expect(decide({ rateStatus: 'broken', porUntil: null }, 12).rateStatus).toBe('flaky');
    expect(decide({ rateStatus: 'broken', porUntil: null }, 5).rateStatus).toBe('healthy');
  });

  it('fewer runs than the minimum sample change nothing', () => {
    expect(decide(healthy, 9, 9)).toEqual({});
    expect(decide(flaky, 0, 9)).toEqual({});
    expect(decide(healthy, 10, 10).rateStatus).toBe('broken');
  });

  it('with the monitor disabled every test is healthy', () => {
    const off = { ...DEFAULT_SETTINGS, failure_rate: { ...FR, enabled: false } };
    expect(decide(flaky, 50, 100, off).rateStatus).toBe('healthy');
    expect(rateStatus('healthy', 100, 50, off.failure_rate)).toBe('healthy');
  });
});

describe('pass-on-retry', () => {
  const evidence = { at: AT, passedAndFailed: true, sha: 'abcdef0123', branch: 'feature/x' };

  it('starts with the commit in its reason and lasts the recovery period', () => {
    expect(decideMonitors(healthy, evidence, DEFAULT_SETTINGS)).toEqual({
      porSince: AT,
      porUntil: AT + 7 * DAY,
      porReason: 'Inconsistent results on the same commit abcdef0 on feature/x',
    });
  });

  it('new evidence while active extends the end and keeps the start', () => {
    const active = { rateStatus: 'healthy' as const, porUntil: AT + DAY };
    expect(decideMonitors(active, evidence, DEFAULT_SETTINGS)).toEqual({ porUntil: AT + 7 * DAY });
  });

  it('after it ended, new evidence starts it again', () => {
    const ended = { rateStatus: 'healthy' as const, porUntil: AT - DAY };
    expect(decideMonitors(ended, evidence, DEFAULT_SETTINGS)).toMatchObject({
      porSince: AT,
      porUntil: AT + 7 * DAY,
    });
  });

  it('no evidence and no rate: nothing changes', () => {
    expect(decideMonitors(healthy, { ...evidence, passedAndFailed: false }, DEFAULT_SETTINGS)).toEqual({});
  });
});

describe('quarantine rule', () => {
  const on = { quarantining_enabled: true, auto_quarantine_flaky: true };

  it('quarantines flaky tests without override and ALWAYS_QUARANTINE tests, never NEVER_QUARANTINE or broken ones', () => {
    const m = quarantineMatches(on);
    expect(isQuarantined(m, null, 'flaky')).toBe(true);
    expect(isQuarantined(m, null, 'broken')).toBe(false);
    expect(isQuarantined(m, null, 'healthy')).toBe(false);
    expect(isQuarantined(m, 'ALWAYS_QUARANTINE', 'healthy')).toBe(true);
    expect(isQuarantined(m, 'NEVER_QUARANTINE', 'flaky')).toBe(false);
  });

  it('without auto-quarantine only ALWAYS_QUARANTINE counts; with quarantining off nothing does', () => {
    const manual = quarantineMatches({ ...on, auto_quarantine_flaky: false });
    expect(isQuarantined(manual, null, 'flaky')).toBe(false);
    expect(isQuarantined(manual, 'ALWAYS_QUARANTINE', 'broken')).toBe(true);
    const off = quarantineMatches({ ...on, quarantining_enabled: false });
    expect(isQuarantined(off, 'ALWAYS_QUARANTINE', 'flaky')).toBe(false);
  });
});

describe('verdictOf: what a view says instead of a bare status', () => {
  const counts = { window: { runs: 3, fails: 3 }, failures7d: 3, passedOnRetry7d: 0 };
  it('a healthy test that failed with fewer runs than the minimum sample has no verdict yet, with the real counts', () => {
    expect(verdictOf({ status: 'healthy', passOnRetryActive: false, ...counts }, DEFAULT_SETTINGS)).toEqual({
      kind: 'not_enough_runs',
      label: 'not enough runs yet (3 of 10)',
      runs: 3,
      failures: 3,
      min_runs: 10,
      window_hours: 72,
      failures_passed_on_retry_last_7d: 0,
    });
    const five: RepositorySettings = { ...DEFAULT_SETTINGS, failure_rate: { ...DEFAULT_SETTINGS.failure_rate, min_sample: 5 } };
    expect(verdictOf({ status: 'healthy', passOnRetryActive: false, ...counts }, five).label).toBe('not enough runs yet (3 of 5)');
    // Failed only off the stable branches: the monitor has seen none of its runs.
    expect(verdictOf({ status: 'healthy', passOnRetryActive: false, window: { runs: 0, fails: 0 }, failures7d: 2, passedOnRetry7d: 0 }, DEFAULT_SETTINGS).label).toBe('not enough runs yet (0 of 10)');
  });

  it('healthy when it never failed, when the sample is complete, or when the failure-rate monitor is off', () => {
    expect(verdictOf({ status: 'healthy', passOnRetryActive: false, window: { runs: 3, fails: 0 }, failures7d: 0, passedOnRetry7d: 0 }, DEFAULT_SETTINGS).label).toBe('healthy');
    expect(verdictOf({ status: 'healthy', passOnRetryActive: false, window: { runs: 12, fails: 1 }, failures7d: 1, passedOnRetry7d: 0 }, DEFAULT_SETTINGS).label).toBe('healthy');
    const off: RepositorySettings = { ...DEFAULT_SETTINGS, failure_rate: { ...DEFAULT_SETTINGS.failure_rate, enabled: false } };
    expect(verdictOf({ status: 'healthy', passOnRetryActive: false, ...counts }, off).kind).toBe('healthy');
  });

  it('names pass-on-retry as the cause of a flaky status; broken wins over it', () => {
    const retried = { ...counts, passedOnRetry7d: 1 };
    expect(verdictOf({ status: 'flaky', passOnRetryActive: true, ...retried }, DEFAULT_SETTINGS)).toMatchObject({
      kind: 'pass_on_retry',
      label: 'flaky: passed on retry',
      failures_passed_on_retry_last_7d: 1,
    });
    expect(verdictOf({ status: 'flaky', passOnRetryActive: false, ...counts }, DEFAULT_SETTINGS)).toMatchObject({ kind: 'failure_rate', label: 'flaky' });
    expect(verdictOf({ status: 'broken', passOnRetryActive: true, ...retried }, DEFAULT_SETTINGS)).toMatchObject({ kind: 'failure_rate', label: 'broken' });
  });
});
