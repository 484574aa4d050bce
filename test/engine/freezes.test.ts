import { describe, expect, it } from 'vitest';
import { activeFreeze, freezesProblem, nextDeadline } from '../../src/engine/index.js';
import { Harness } from './harness.js';

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

describe('freeze windows', () => {
  it('an absolute window holds from its start (included) to its end (excluded), whatever zone it is written in', () => {
    const w = [{ start: '2026-12-24T18:00:00+01:00', end: '2026-12-26T08:00:00Z', reason: 'holidays' }];
    expect(activeFreeze(w, at('2026-12-24T16:59:59Z'))).toBeNull();
    expect(activeFreeze(w, at('2026-12-24T17:00:00Z'))).toEqual({
      until: at('2026-12-26T08:00:00Z'),
      reason: 'holidays',
    });
    expect(activeFreeze(w, at('2026-12-26T07:59:59Z'))?.until).toBe(at('2026-12-26T08:00:00Z'));
    expect(activeFreeze(w, at('2026-12-26T08:00:00Z'))).toBeNull();
  });

  it('a cron window recurs in UTC for durationMinutes from each occurrence', () => {
    // Fridays 16:00 UTC for 2 days 16 hours: the weekend, Monday 08:00 UTC.
    const w = [{ cron: '0 16 * * 5', durationMinutes: (2 * 24 + 16) * 60, reason: 'weekend' }];
    expect(activeFreeze(w, at('2026-12-04T15:59:00Z'))).toBeNull(); // a Friday
    expect(activeFreeze(w, at('2026-12-04T16:00:00Z'))).toEqual({
      until: at('2026-12-07T08:00:00Z'),
      reason: 'weekend',
    });
    expect(iso(activeFreeze(w, at('2026-12-06T23:00:00Z'))?.until)).toBe('2026-12-07T08:00:00.000Z');
    expect(activeFreeze(w, at('2026-12-07T08:00:00Z'))).toBeNull();
    expect(activeFreeze(w, at('2026-12-09T12:00:00Z'))).toBeNull(); // Wednesday
  });

  it('keeps UTC across the European and American DST changes: no window shifts by an hour', () => {
    const w = [{ cron: '0 9 * * *', durationMinutes: 60 }];
    for (const day of ['2026-03-08', '2026-03-29', '2026-10-25', '2026-11-01']) {
      expect(activeFreeze(w, at(`${day}T08:59:59Z`))).toBeNull();
      expect(activeFreeze(w, at(`${day}T09:00:00Z`))).toEqual({
        until: at(`${day}T10:00:00Z`),
        reason: null,
      });
      expect(activeFreeze(w, at(`${day}T10:00:00Z`))).toBeNull();
    }
  });

  it('a freeze lasts until no window holds the queue: windows that begin before one ends chain', () => {
    const w = [
      { start: '2026-12-01T10:00:00Z', end: '2026-12-01T12:00:00Z', reason: 'release' },
      { start: '2026-12-01T11:30:00Z', end: '2026-12-01T13:00:00Z' },
      { cron: '0 13 * * *', durationMinutes: 30 },
      { start: '2026-12-01T14:00:00Z', end: '2026-12-01T15:00:00Z' },
    ];
    expect(activeFreeze(w, at('2026-12-01T10:30:00Z'))).toEqual({
      until: at('2026-12-01T13:30:00Z'),
      reason: 'release',
    });
    expect(activeFreeze(w, at('2026-12-01T13:45:00Z'))).toBeNull();
  });

  it('names what is wrong with a window: no zone, not a time, end before start, not a cron expression', () => {
    expect(freezesProblem([{ start: '2026-12-24T18:00', end: '2026-12-25T00:00Z' }])).toBe(
      'freezes[0].start: "2026-12-24T18:00" has no time zone: add Z for UTC (2026-12-24T18:00:00Z) or an offset (+01:00)',
    );
    expect(freezesProblem([{ start: '2026-12-24T18:00Z', end: 'tomorrow' }])).toBe(
      'freezes[0].end: "tomorrow" is not an ISO 8601 time such as 2026-12-24T18:00:00Z',
    );
    expect(freezesProblem([{ start: '2026-12-24T18:00Z', end: '2026-12-24T17:00Z' }])).toBe(
      'freezes[0]: end (2026-12-24T17:00Z) must be after start (2026-12-24T18:00Z)',
    );
    expect(
      freezesProblem([
        { cron: '0 18 * * 5', durationMinutes: 60 },
        { cron: '61 * * * *', durationMinutes: 5 },
      ]),
    ).toMatch(/^freezes\[1\]\.cron: "61 \* \* \* \*" is not a cron expression \(.*59/);
    expect(freezesProblem([{ cron: '0 18 * * 5', durationMinutes: 60 }])).toBeNull();
  });
});

describe('a frozen queue', () => {
  const friday = '2026-01-09T12:00:00Z';
  const freeze = { freezes: [{ start: '2026-01-05T00:00:00Z', end: friday, reason: 'release 4.2' }] };

  it('tests, but lands nothing until the freeze ends; the tick at its end lands', () => {
    const h = new Harness({ concurrency: 2, ...freeze });
    h.checkWorkingSet = true;
    h.submit(1);
    h.submit(2);
    h.finish(h.runOf(1).id, true);
    h.finish(h.runOf(2).id, true);
    expect([h.state(1), h.state(2)]).toEqual(['tests_passed', 'tests_passed']);
    expect(h.log.filter((l) => l.effect.type === 'merge')).toEqual([]);
    expect(h.target).toEqual([]);
    expect(nextDeadline(h.model, h.now)).toBe(at(friday));
    h.now = at(friday) - 1;
    h.apply({ type: 'tick' });
    expect(h.target).toEqual([]);
    h.now = at(friday);
    h.apply({ type: 'tick' });
    expect(h.target).toEqual([1, 2]);
  });

  it('lands a PR of priority 0 (and up to freezeBypassPriority), interrupting passed PRs it would wait behind', () => {
    const h = new Harness({ concurrency: 2, ...freeze, freezeBypassPriority: 10 });
    h.checkWorkingSet = true;
    h.submit(1);
    h.finish(h.runOf(1).id, true);
    expect(h.state(1)).toBe('tests_passed');
    h.submit(2, { priority: 'high' }); // 10: bypasses this queue's freezes, though it does not skip the line
    expect(h.runOf(2).basePrNumbers).toEqual([]);
    expect(h.state(1)).toBe('testing'); // retested on top of #2
    expect(h.runOf(1).basePrNumbers).toEqual([2]);
    h.finish(h.runOf(2).id, true);
    expect(h.target).toEqual([2]);
    h.finish(h.runOf(1).id, true);
    expect(h.state(1)).toBe('tests_passed');
    expect(h.target).toEqual([2]);
  });

  it('lifting the freeze (an empty list) lands what passed at once', () => {
    const h = new Harness({ ...freeze });
    h.submit(1);
    h.finish(h.runOf(1).id, true);
    expect(h.target).toEqual([]);
    h.apply({ type: 'updateConfig', patch: { freezes: [] } });
    expect(h.target).toEqual([1]);
  });
});
