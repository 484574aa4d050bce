// The GitHub write line: one write at a time, at most one per interval, landing first, then final
// statuses, final comments, updates and draft PRs; a write replaced while it waits is dropped.
import { describe, expect, it } from 'vitest';
import { DROPPED, WriteLine, WritePriority } from '../../src/forge/github/writes.js';

describe('WriteLine', () => {
  it('sends by priority (then arrival), replaces waiting writes with the same key, and drops what is no longer wanted', async () => {
    const line = new WriteLine(20);
    const sent: string[] = [];
    const job = (name: string) => async () => {
      sent.push(name);
      return name;
    };
    let runEnded = false;
    const results = await Promise.all([
      line.schedule(job('first update'), { priority: WritePriority.update, key: 'status#1' }), // sent at once
      line.schedule(job('draft PR'), { priority: WritePriority.background, stillWanted: () => !runEnded }),
      line.schedule(job('stale comment #2'), { priority: WritePriority.update, key: 'comment#2' }),
      line.schedule(job('comment #2'), { priority: WritePriority.update, key: 'comment#2' }),
      line.schedule(job('final status #3'), { priority: WritePriority.final }),
      line.schedule(job('final comment #3'), { priority: WritePriority.final }),
      line.schedule(job('land'), { priority: WritePriority.land }),
      (async () => {
        await new Promise((r) => setTimeout(r, 5));
        runEnded = true;
        return 'ended';
      })(),
    ]);
    expect(sent).toEqual(['first update', 'land', 'final status #3', 'final comment #3', 'comment #2']);
    expect(results[1]).toBe(DROPPED);
    expect(results[2]).toBe(DROPPED);
    expect(results[3]).toBe('comment #2');
    expect([line.sent, line.dropped]).toEqual([5, 2]);
  });

  it('starts writes at least the interval apart, and a failed write does not stop the line', async () => {
    const line = new WriteLine(60);
    const starts: number[] = [];
    const write = (fail: boolean) => async () => {
      starts.push(Date.now());
      if (fail) throw new Error('422');
      return 'ok';
    };
    const outcomes = await Promise.allSettled([line.schedule(write(false)), line.schedule(write(true)), line.schedule(write(false))]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    for (let i = 1; i < starts.length; i++) expect(starts[i] - starts[i - 1]).toBeGreaterThanOrEqual(55);
    line.close();
    expect(await line.schedule(write(false))).toBe(DROPPED);
  });
});
