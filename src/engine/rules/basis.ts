/**
 * Basis: what the test commit of a new run is built on. The units ahead that a run depends on
 * (its `basePrNumbers`, those not merged yet) are either already held by the test commit of the
 * unit just ahead — then the run is built on that commit, so that landing that unit first keeps
 * this run's commit a fast-forward of the target — or they are applied again on the target head.
 * The engine names the basis in the `startTestRun` effect; the forge builds exactly that.
 */
import type { Entry, QueueModel, TestBasis, TestRun } from '../types.js';
import { findEntry } from '../model.js';

/** Lookups the rule needs: the current entry of a PR and a run by id. */
export interface BasisLookups {
  entry: (prNumber: number) => Entry | undefined;
  run: (runId: string) => TestRun | undefined;
}

/** PRs of `prNumbers` that have not merged, in order. */
const unmerged = (prNumbers: readonly number[], l: BasisLookups) => prNumbers.filter((pr) => l.entry(pr)?.state !== 'merged');

/**
 * The basis of `run`: the run of the unit just ahead when its test commit holds exactly this run's
 * unmerged base (the units it was built on plus its own PRs), else the target head.
 */
export function basisOf(run: TestRun, l: BasisLookups): TestBasis {
  const base = unmerged(run.basePrNumbers, l);
  if (base.length === 0) return { on: 'target' };
  const ahead = l.entry(base[base.length - 1]);
  const aheadRun = ahead?.testRunId ? l.run(ahead.testRunId) : undefined;
  if (!aheadRun || aheadRun.id === run.id) return { on: 'target' };
  const covered = unmerged([...aheadRun.basePrNumbers, ...aheadRun.prNumbers], l);
  return covered.join() === base.join() ? { on: 'run', runId: aheadRun.id } : { on: 'target' };
}

/** The basis of `run` in `model` (the shell asks again for runs it re-attaches to after a restart). */
export function testBasis(model: QueueModel, run: TestRun): TestBasis {
  return basisOf(run, {
    entry: (pr) => findEntry(model, pr),
    run: (id) => {
      for (let i = model.runs.length - 1; i >= 0; i--) if (model.runs[i].id === id) return model.runs[i];
      return undefined;
    },
  });
}
