// The GitHub write line: one write at a time, at most one per interval, landing first, then final
// statuses, final comments, updates and draft PRs; a write replaced while it waits is dropped.
import { describe, expect, it, vi } from 'vitest';
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
    const outcomes = await Promise.allSettled([
      line.schedule(write(false)),
      line.schedule(write(true)),
      line.schedule(write(false)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    for (let i = 1; i < starts.length; i++) expect(starts[i] - starts[i - 1]).toBeGreaterThanOrEqual(55);
    line.close();
    expect(await line.schedule(write(false))).toBe(DROPPED);
  });

  it("keeps GitHub's budget (a minute's window), leaves most of it to fates, and waits while GitHub asked to", async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    try {
      let paused = 0;
      const line = new WriteLine({ budget: { perMinute: 10, perHour: 100 }, pausedUntil: () => paused });
      const sent: Array<[string, number]> = [];
      const job = (name: string) => () => {
        sent.push([name, Date.now()]);
        return Promise.resolve(name);
      };
      // Ten progress updates: 30 % of the minute's budget (3) go now, the rest wait for the window.
      const updates = Array.from({ length: 10 }, (_, i) =>
        line.schedule(job(`update ${i}`), { priority: WritePriority.update }),
      );
      await vi.advanceTimersByTimeAsync(0);
      expect(sent.map(([n]) => n)).toEqual(['update 0', 'update 1', 'update 2']);
      // Fates use the whole budget, before the updates still waiting.
      const fates = Array.from({ length: 8 }, (_, i) =>
        line.schedule(job(`final ${i}`), { priority: WritePriority.final }),
      );
      await vi.advanceTimersByTimeAsync(0);
      expect(sent.map(([n]) => n).slice(3)).toEqual([
        'final 0',
        'final 1',
        'final 2',
        'final 3',
        'final 4',
        'final 5',
        'final 6',
      ]);
      // The minute is full (10): the other fates wait for the first writes to leave the window
      // (61 s: a margin over GitHub's clock).
      await vi.advanceTimersByTimeAsync(60_000);
      expect(sent).toHaveLength(10);
      await vi.advanceTimersByTimeAsync(1_000);
      expect(sent[10]).toEqual(['final 7', 1_061_000]);
      // GitHub asks to wait (Retry-After): nothing starts until then.
      paused = Date.now() + 30_000;
      const late = line.schedule(job('land'), { priority: WritePriority.land });
      await vi.advanceTimersByTimeAsync(29_000);
      expect(sent.map(([n]) => n)).not.toContain('land');
      await vi.advanceTimersByTimeAsync(1_000);
      expect(sent.map(([n]) => n)).toContain('land');
      // Never more than 10 in any minute.
      await vi.advanceTimersByTimeAsync(10 * 60_000);
      await Promise.all([...updates, ...fates, late]);
      const at = sent.map(([, t]) => t);
      for (let i = 10; i < at.length; i++) expect(at[i] - at[i - 10]).toBeGreaterThanOrEqual(61_000);
      line.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('holds a write until its notBefore: a newer write with the same key replaces it meanwhile, and others go first', async () => {
    const line = new WriteLine();
    const sent: Array<[string, number]> = [];
    const t0 = Date.now();
    const job = (name: string) => async () => {
      sent.push([name, Date.now() - t0]);
      return name;
    };
    const held = line.schedule(job('testing'), { key: 'comment#1', notBefore: t0 + 300 });
    const other = line.schedule(job('status #2'), { priority: WritePriority.update });
    await new Promise((r) => setTimeout(r, 100));
    const final = line.schedule(job('merged'), { key: 'comment#1', priority: WritePriority.final });
    const later = line.schedule(job('progress #3'), { key: 'comment#3', notBefore: Date.now() + 150 });
    expect(await Promise.all([held, other, final, later])).toEqual([
      DROPPED,
      'status #2',
      'merged',
      'progress #3',
    ]);
    expect(sent.map(([n]) => n)).toEqual(['status #2', 'merged', 'progress #3']);
    // The held one went no earlier than asked (and not 300 ms later either: the line wakes for it).
    expect(sent[2]![1]).toBeGreaterThanOrEqual(245);
    expect(sent[2]![1]).toBeLessThan(1000);
  });
});
