import { describe, expect, it } from 'vitest';
import {
  defaultConfig,
  inTestingMinutes,
  nextDeadline,
  setTestingMinuteMs,
  testingTimeoutMs,
} from '../../src/engine/index.js';
import { Harness } from './harness.js';

const MIN = 60_000;
const auto = (samplesMin: number[]) => ({
  ...defaultConfig(),
  testingTimeoutMinutes: 'auto' as const,
  recentPassedRunMs: samplesMin.map((m) => m * MIN),
});

describe('testingTimeoutMinutes: "auto"', () => {
  it('is 60 minutes until 10 runs passed, then 1.5 × the p95 of the last runs, at least 10 minutes', () => {
    expect(testingTimeoutMs(auto([]))).toBe(60 * MIN);
    expect(testingTimeoutMs(auto(Array(9).fill(200)))).toBe(60 * MIN);
    // 20 runs of 1..20 minutes: the p95 (nearest rank) is 19 minutes.
    expect(testingTimeoutMs(auto(Array.from({ length: 20 }, (_, i) => i + 1)))).toBe(28.5 * MIN);
    expect(testingTimeoutMs(auto(Array(10).fill(2)))).toBe(10 * MIN);
    expect(testingTimeoutMs({ ...defaultConfig(), testingTimeoutMinutes: 45 })).toBe(45 * MIN);
  });

  it("learns from the queue's passing runs (the last 50), and fails a run that outlives it with TEST_RUN_TIMEOUT", () => {
    const h = new Harness({ testingTimeoutMinutes: 'auto' });
    h.checkWorkingSet = true;
    for (let pr = 1; pr <= 60; pr++) {
      h.submit(pr);
      h.now += (pr <= 10 ? 100 : 20) * MIN; // the first 10 runs take 100 minutes, the rest 20
      h.finish(h.runOf(pr).id, true);
    }
    expect(h.model.config.recentPassedRunMs).toHaveLength(50);
    expect(testingTimeoutMs(h.model.config)).toBe(30 * MIN);
    h.submit(61);
    const started = h.now;
    expect(nextDeadline(h.model)).toBe(started + 30 * MIN);
    h.now = started + 30 * MIN - 1;
    h.apply({ type: 'tick' });
    expect(h.state(61)).toBe('testing');
    h.now = started + 30 * MIN;
    h.apply({ type: 'tick' });
    expect([h.state(61), h.reason(61)]).toEqual(['failed', 'TEST_RUN_TIMEOUT']);
  });

  it('a fixed timeout keeps no samples', () => {
    const h = new Harness({ testingTimeoutMinutes: 300 });
    h.submit(1);
    h.finish(h.runOf(1).id, true);
    expect(h.model.config.recentPassedRunMs).toBeUndefined();
  });
});

describe('serve --testing-minute-seconds: how long a minute of testingTimeoutMinutes lasts', () => {
  it('times a run out after that many shorter minutes, still told in minutes; 60 s again after', () => {
    setTestingMinuteMs(10_000);
    try {
      const h = new Harness({ testingTimeoutMinutes: 1 });
      h.submit(1);
      const started = h.now;
      expect(nextDeadline(h.model)).toBe(started + 10_000);
      h.now = started + 9_999;
      h.apply({ type: 'tick' });
      expect(h.state(1)).toBe('testing');
      h.now = started + 10_000;
      h.apply({ type: 'tick' });
      expect([h.state(1), h.reason(1)]).toEqual(['failed', 'TEST_RUN_TIMEOUT']);
      expect(inTestingMinutes(testingTimeoutMs(h.model.config))).toBe(1);
      // "auto": its floor and its default scale too; the p95 of real runs does not.
      expect(testingTimeoutMs(auto([]))).toBe(60 * 10_000);
      expect(testingTimeoutMs(auto(Array(10).fill(2)))).toBe(2 * MIN * 1.5);
      expect(() => setTestingMinuteMs(0)).toThrow('a testing minute must last a positive time, not 0 ms');
    } finally {
      setTestingMinuteMs(MIN);
    }
    expect(testingTimeoutMs({ ...defaultConfig(), testingTimeoutMinutes: 45 })).toBe(45 * MIN);
  });
});
