/**
 * The engine's working set (src/engine/working-set.ts): a step runs the rules on the PRs in the
 * queue and what they name, not on the queue's whole history. Every step here is checked against
 * the rules run on the whole model; what a person would see is checked too.
 */
import { describe, expect, it } from 'vitest';
import { Harness } from './harness.js';

describe('working set', () => {
  it('a queue with a long history lands and refuses exactly as the whole model says, also after a step whose commit was thrown away', () => {
    const h = new Harness({ concurrency: 2, batch: true, batchingMinSize: 2, batchingMaxWaitTimeMinutes: 1 });
    h.checkWorkingSet = true;
    // A history of 300 PRs: most merged, every 7th broken (failed after bisection), every 11th cancelled.
    for (let pr = 1; pr <= 300; pr++) {
      h.submit(pr);
      if (pr % 11 === 0) h.apply({ type: 'cancel', prNumber: pr, reason: 'USER_REQUESTED' });
      if (pr % 20 === 0) h.settle((run) => !run.prNumbers.some((n) => n % 7 === 0));
    }
    h.settle((run) => !run.prNumbers.some((n) => n % 7 === 0));
    expect(h.state(1)).toBe('merged');
    expect(h.state(7)).toBe('failed');
    expect(h.state(11)).toBe('cancelled');

    // Steps the server threw away (their commit failed): the model goes back, other PRs come next.
    const kept = h.model;
    h.submit(301);
    h.submit(302);
    h.model = kept;
    h.submit(303);
    expect(() => h.apply({ type: 'cancel', prNumber: 301, reason: 'USER_REQUESTED' })).toThrow(/never submitted/);
    expect(() => h.apply({ type: 'cancel', prNumber: 11, reason: 'USER_REQUESTED' })).toThrow(/is cancelled/);
    h.submit(11); // a PR cancelled long ago comes back
    h.submit(304);
    h.settle(() => true);
    expect([h.state(303), h.state(11), h.state(304)]).toEqual(['merged', 'merged', 'merged']);
    expect(h.state(301)).toBeUndefined();
    expect(() => h.apply({ type: 'cancel', prNumber: 303, reason: 'USER_REQUESTED' })).toThrow(/is merged/);
    expect(h.model.entries.filter((e) => e.prNumber === 11).map((e) => e.state)).toEqual(['cancelled', 'merged']);
  });
});
