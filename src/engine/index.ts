/**
 * The merge-queue engine: a pure function `step(model, event, ctx) → { model, effects }` over the
 * plain-data state of one queue. No I/O and no clock (the caller passes `now` and an id source);
 * the server, the simulator and the tests all drive this same function.
 *
 * How a step works
 * - The working copy (working-copy.ts) holds the model being changed, the effects asked of the
 *   shell so far, and indexes by entry id and PR number. Entries and runs are replaced, never
 *   edited, so the caller's model is untouched; every state change becomes a `stateChanged`
 *   effect.
 * - The event goes to its handler (step.ts holds the map, typed by event type). Commands
 *   (events/commands.ts) come from people and the forge: submit, cancel, restart, impacted
 *   targets, PR facts, settings. Outcomes (events/outcomes.ts) come back from the shell: a run
 *   started, could not be built, finished; a merge landed or failed; the target moved; time
 *   passed. Handlers change only what the event says directly.
 * - `settle` (step.ts) then applies the rules, round after round until a round asks nothing new
 *   of the shell, and throws if that takes more than 64 rounds (a rule would be undoing another).
 *
 * The rules (rules/), in the order settle applies them in each round
 * - Readiness (readiness.ts): a PR is admitted (`not_ready` → `pending`) once it targets the
 *   branch, is mergeable and (parallel mode) has impacted targets; it leaves again when that
 *   stops holding.
 * - Stacks (stacks.ts): the PRs of a stack (a PR based on another PR's head branch) are one
 *   unit: admitted, tested and landed whole, bottom first; a PR of a stack that leaves takes the
 *   PRs above it along (Trunk's `STACKED_PR_MEMBER_*` reasons); a stack split over runs restarts.
 * - Invalidation (invalidation.ts): a run nobody is in stops; a passing bisection group that
 *   cannot land directly rejoins the line (bisection.ts); an urgent PR interrupts the non-urgent
 *   tests it would wait behind; a unit whose own PRs or base no longer hold goes back to pending,
 *   and the reason passes on to what was built on it.
 * - Flake-aware verdicts (flaky-verdict.ts, applied when a run finishes): a failure only of
 *   quarantined (or known-flaky) tests counts as passed under `flakyPolicy`; one only of tests
 *   with flake history is tested again on the same base up to `flakyRetries` times; a test a PR of
 *   the run changes is never ignored or retried.
 * - Failures, bisection and known failures (bisection.ts): a failed unit waits until the culprit
 *   can only be in it, then fails (one PR) or is split in halves tested off the line; a
 *   combination already known to fail is not tested again.
 * - Merging (merging.ts): one merge at a time, of the first passing unit whose base has landed
 *   (or, optimistically, is still ahead of it in the line).
 * - Probation (probation.ts): a pending PR whose `riskEstimate` is above `probationThreshold` is
 *   first tested alone off the line, as a group of one on the bisection slots; it joins the line
 *   (or lands directly) only after that run passed.
 * - Scheduling and batching (scheduling.ts): pending PRs start runs in queue order while slots
 *   are free, bisection groups first, in batches when batching, each on the target plus the part
 *   of the line ahead that it depends on.
 * - Basis (basis.ts): a new run is built on the test commit of the unit just ahead when that
 *   commit holds exactly its base, else on the target head; `startTestRun` names which.
 * - Lanes (lanes.ts): in parallel mode PRs whose impacted targets overlap share a lane; the slot
 *   limits apply per lane.
 * After the last round, a pending mode switch completes once nothing is admitted (readiness.ts).
 *
 * docs/architecture.md places the engine among the other layers.
 */
export * from './types.js';
export {
  activeEntries,
  compareEntries,
  defaultConfig,
  findEntry,
  IN_RUN,
  isTerminal,
  listOrder,
  newQueueModel,
  nextDeadline,
  targetsOverlap,
} from './model.js';
export { testBasis } from './rules/basis.js';
export { effectsBetween } from './effects-between.js';
export { changedItems, type ItemChanges } from './working-set.js';
export { laneNumbers } from './rules/lanes.js';
export { flakyVerdict } from './rules/flaky-verdict.js';
export { needsProbation } from './rules/probation.js';
export { conflictSentence, prConflictSentence, readinessOf } from './rules/readiness.js';
export { stackOf, stackSentence } from './rules/stacks.js';
export { step } from './step.js';
export { activeFreeze, freezesProblem, landsAt, type ActiveFreeze } from './freezes.js';
export { inTestingMinutes, setTestingMinuteMs, testingTimeoutMs } from './timeout.js';
