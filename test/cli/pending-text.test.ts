/**
 * A pending webhook delivery's next attempt, as `webhook deliveries` shows it: the time of day
 * while it is less than a day ahead — also past midnight, where the row once grew by a date and
 * no longer fit a 100-column table — and the date with it beyond a day.
 */
import { describe, expect, it } from 'vitest';
import { pendingText } from '../../src/cli/webhooks.js';

// Local times, so the test reads the same in every time zone.
const at = (day: number, h: number, m: number, s = 0) => new Date(2026, 11, day, h, m, s);

describe('a pending delivery’s next attempt', () => {
  it('is a time of day within the day, and past midnight', () => {
    expect(pendingText(at(3, 17, 40, 3).toISOString(), at(3, 17, 38).getTime())).toBe(
      'pending (next 17:40:03, in 2 minutes)',
    );
    expect(pendingText(at(4, 0, 27, 26).toISOString(), at(3, 23, 20).getTime())).toBe(
      'pending (next 00:27:26, in 1 hour)',
    );
  });

  it('carries its date a day or more ahead, and reads "due now" once past', () => {
    expect(pendingText(at(5, 9, 0).toISOString(), at(3, 23, 20).getTime())).toMatch(
      /^pending \(next 2026-12-05 09:00:00, in /,
    );
    expect(pendingText(at(3, 9, 0).toISOString(), at(3, 9, 1).getTime())).toBe(
      'pending (next attempt due now)',
    );
  });
});
