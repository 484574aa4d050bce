/** The simulator's pruning of a long-running queue model: what the engine can no longer need goes. */
import { isTerminal, type QueueModel } from '../engine/index.js';

/**
 * Drops what the engine can no longer need: runs that are not in progress and that no entry in
 * the queue is in, and terminal entries no kept run mentions (as base, unit or merge). A kept
 * run's base PRs must stay findable: the engine tells "merged" from "gone" by their entries.
 */
export function pruneModel(model: QueueModel): QueueModel {
  const liveRuns = new Set<string>();
  let terminal = 0;
  for (const e of model.entries) {
    if (isTerminal(e.state)) terminal++;
    else if (e.testRunId) liveRuns.add(e.testRunId);
  }
  const runs = model.runs.filter((r) => r.status === 'in_progress' || liveRuns.has(r.id));
  if (terminal === 0 && runs.length === model.runs.length) return model;
  const referenced = new Set<number>();
  for (const r of runs) {
    for (const pr of r.basePrNumbers) referenced.add(pr);
    for (const pr of r.prNumbers) referenced.add(pr);
    for (const pr of r.mergePrNumbers ?? []) referenced.add(pr);
  }
  for (const e of model.entries) {
    if (isTerminal(e.state) || !e.bisectKnownFailure) continue;
    for (const pr of e.bisectKnownFailure.prs) referenced.add(pr);
    for (const pr of e.bisectKnownFailure.base) referenced.add(pr);
  }
  const entries = model.entries.filter((e) => !isTerminal(e.state) || referenced.has(e.prNumber));
  return { ...model, entries, runs };
}
