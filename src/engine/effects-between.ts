/**
 * The effects a queue owes for a change it did not step through itself: comparing two committed
 * models (the copy a replica held and the one another replica committed, or nothing and the model
 * found on a restart) gives the test runs that started, the runs that stopped and the merges that
 * were asked for in between. Pure, like the rest of the engine.
 */
import { testBasis } from './rules/basis.js';
import type { Effect, QueueModel } from './types.js';

/**
 * The effects a driving replica owes for changes it did not make itself (another replica
 * committed them): test runs that started, runs that stopped, merges that were asked for.
 * With no earlier copy, every run in progress and every pending merge (as on a restart).
 */
export function effectsBetween(before: QueueModel | null, after: QueueModel): Effect[] {
  const old = new Map((before?.runs ?? []).map((r) => [r.id, r]));
  const effects: Effect[] = [];
  for (const run of after.runs) {
    const was = old.get(run.id);
    if (run.status === 'in_progress' && was?.status !== 'in_progress')
      effects.push({ type: 'startTestRun', runId: run.id, basis: testBasis(after, run) });
    if (run.mergeRequested && !was?.mergeRequested)
      effects.push({ type: 'merge', runId: run.id, prNumbers: run.mergePrNumbers ?? run.prNumbers });
  }
  const now = new Map(after.runs.map((r) => [r.id, r]));
  for (const was of old.values()) {
    if (was.status === 'in_progress' && now.get(was.id)?.status !== 'in_progress')
      effects.push({ type: 'cancelTestRun', runId: was.id });
  }
  return effects;
}
