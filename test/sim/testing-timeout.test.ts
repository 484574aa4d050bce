import { describe, expect, it } from 'vitest';
import { simulate } from '../../src/sim/index.js';

// The simulator with a required check that never reports in 5 % of runs: the queue's throughput
// with testingTimeoutMinutes "auto" against the fixed 300-minute default (bench/testing-timeout.ts
// measures the same over longer runs).
describe('railyard sim: a check that never reports', () => {
  const base = {
    backlog: 100,
    keepBacklog: true,
    arrivalRate: 0,
    hours: 60,
    warmupHours: 2,
    ciJitter: 0.2,
    hangRate: 0.05,
  };

  it('"auto" merges at least twice as many PRs per hour as the fixed 300 minutes', () => {
    const fixed = simulate({ ...base, testingTimeoutMinutes: 300 });
    const auto = simulate({ ...base, testingTimeoutMinutes: 'auto' });
    expect(fixed.mergedBroken).toBe(0);
    expect(auto.mergedBroken).toBe(0);
    expect(auto.mergedPerHour / fixed.mergedPerHour).toBeGreaterThanOrEqual(2);
  });

  it('without hangs or a timeout the figures are those of before (no new random draws)', () => {
    const plain = simulate({ backlog: 50, keepBacklog: true, arrivalRate: 0, hours: 10 });
    const zero = simulate({ backlog: 50, keepBacklog: true, arrivalRate: 0, hours: 10, hangRate: 0 });
    const { wallMs: _a, options: _o1, ...a } = plain as typeof plain & { wallMs?: number };
    const { wallMs: _b, options: _o2, ...b } = zero as typeof zero & { wallMs?: number };
    expect(b).toEqual(a);
  });
});
