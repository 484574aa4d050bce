/**
 * `step`: one event in, the next model and the effects out. The event's handler changes the
 * working copy; `settle` then applies the rules until they agree. The overview of the rules is in
 * ./index.ts.
 */
import * as commands from './events/commands.js';
import * as outcomes from './events/outcomes.js';
import { cancelOrphanRuns, invalidate, preempt } from './rules/invalidation.js';
import { releaseBisections, resolveFailures } from './rules/bisection.js';
import { requestMerge } from './rules/merging.js';
import { startProbation } from './rules/probation.js';
import { applyReadiness, completeModeSwitch } from './rules/readiness.js';
import { startRuns } from './rules/scheduling.js';
import { applyStacks } from './rules/stacks.js';
import type { EngineEvent, QueueModel, StepContext, StepResult } from './types.js';
import { WorkingCopy } from './working-copy.js';
import { mergeWorkingSet, workingSet } from './working-set.js';

type Handler<E extends EngineEvent> = (w: WorkingCopy, event: E) => void;

/** One handler per event type: an event type without a handler here does not compile. */
const handlers: { [T in EngineEvent['type']]: Handler<Extract<EngineEvent, { type: T }>> } = {
  submit: commands.submit,
  cancel: commands.cancel,
  restart: commands.restart,
  impactedTargets: commands.impactedTargets,
  prUpdated: commands.prUpdated,
  updateConfig: commands.updateConfig,
  tick: outcomes.tick,
  testRunStarted: outcomes.testRunStarted,
  testRunStartFailed: outcomes.testRunStartFailed,
  testRunFinished: outcomes.testRunFinished,
  mergeSucceeded: outcomes.mergeSucceeded,
  mergeFailed: outcomes.mergeFailed,
  targetMoved: outcomes.targetMoved,
};

/**
 * Applies one event. Pure: the same (model, event, ctx) always gives the same result.
 * Throws EngineRejection for commands that cannot apply (unknown PR, terminal entry).
 * The rules run on the event's working set (./working-set.ts): concluded PRs and finished runs
 * they never read are carried over in place, so a long history does not slow every step.
 */
export function step(model: QueueModel, event: EngineEvent, ctx: StepContext): StepResult {
  const set = workingSet(model, event);
  const w = new WorkingCopy(set.model, ctx);
  // TypeScript cannot tie `handlers[event.type]` to `event`; the map's type guarantees they match.
  (handlers[event.type] as Handler<EngineEvent>)(w, event);
  settle(w);
  return { model: mergeWorkingSet(model, set, w.model), effects: w.effects };
}

/**
 * The same step with the rules run on the whole model, history included: what `step` must always
 * answer (the engine's property tests compare the two after every step).
 */
export function stepWhole(model: QueueModel, event: EngineEvent, ctx: StepContext): StepResult {
  const w = new WorkingCopy(model, ctx);
  (handlers[event.type] as Handler<EngineEvent>)(w, event);
  settle(w);
  return w.result();
}

/** Rounds after which `settle` gives up: far more than any real step needs (a rule must be undoing another). */
const MAX_ROUNDS = 64;

/**
 * Applies the rules in order until a round asks nothing more of the shell, then completes a
 * pending mode switch. Throws when the rules have not settled after MAX_ROUNDS rounds.
 */
function settle(w: WorkingCopy): void {
  for (let round = 0; ; round++) {
    if (round === MAX_ROUNDS) {
      throw new Error(
        `the engine did not settle after ${MAX_ROUNDS} rounds of its rules (${w.effects.length} effects so far): a rule keeps undoing another`,
      );
    }
    const before = w.effects.length;
    applyReadiness(w);
    applyStacks(w);
    cancelOrphanRuns(w);
    releaseBisections(w);
    preempt(w);
    invalidate(w);
    resolveFailures(w);
    requestMerge(w);
    startProbation(w);
    startRuns(w);
    if (w.effects.length === before) break;
  }
  completeModeSwitch(w);
}
