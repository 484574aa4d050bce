import { describe, expect, it } from 'vitest';
import { readinessOf } from '../../src/engine/index.js';
import { facts, Harness } from './harness.js';

describe('direct submissions', () => {
  it("are admitted past the forge's requirements (branch rules, mergeability) and still tested; others wait", () => {
    const h = new Harness({ concurrency: 3 });
    h.checkWorkingSet = true;
    const blocked = { ...facts(1), blockedBy: '1 approving review is required' };
    const computing = { ...facts(2), mergeability: 'in_progress' as const };
    h.apply({ type: 'submit', prNumber: 1, pr: blocked });
    h.apply({ type: 'submit', prNumber: 2, pr: computing });
    expect([h.state(1), h.state(2)]).toEqual(['not_ready', 'not_ready']);
    h.apply({
      type: 'submit',
      prNumber: 3,
      pr: { ...facts(3), blockedBy: 'changes requested' },
      direct: true,
    });
    h.apply({ type: 'submit', prNumber: 4, pr: { ...facts(4), mergeability: 'in_progress' }, direct: true });
    expect([h.state(3), h.state(4)]).toEqual(['testing', 'testing']);
    const entry = h.model.entries.find((e) => e.prNumber === 3)!;
    expect(entry.direct).toBe(true);
    expect(readinessOf(h.model, entry).waitingFor).toEqual([]);
    // Resubmitting direct admits a waiting PR; the queue's own requirements still hold a direct PR.
    h.apply({ type: 'submit', prNumber: 1, pr: blocked, direct: true });
    expect(h.state(1)).toBe('testing');
    h.apply({ type: 'submit', prNumber: 5, pr: facts(5, 'release'), direct: true });
    expect(h.state(5)).toBe('not_ready');
    h.finish(h.runOf(3).id, true);
    h.finish(h.runOf(4).id, true);
    h.finish(h.runOf(1).id, true);
    expect(h.target).toEqual([3, 4, 1]);
    expect(h.state(2)).toBe('not_ready');
  });
});
