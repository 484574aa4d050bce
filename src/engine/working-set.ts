/**
 * The working set of a step: the part of a queue model the rules can read or change. A queue keeps
 * every PR it ever had (concluded ones for its history and answers) and every run; the rules pass
 * over entries and runs several times per step, so a step on a queue with a long history cost time
 * in proportion to that history (issue 25: 20,000 concluded PRs made each submit cost ~15 ms and
 * the API stopped answering). `step` runs the rules on the working set and puts the result back
 * in place, so the cost of a step follows the PRs in the queue, not the PRs it ever held.
 *
 * What the rules read besides PRs in the queue, and so what the working set holds:
 * - every entry of a PR the event names (a command on a concluded PR is refused with its state; a
 *   resubmission reuses the impacted targets of the earlier one), of a PR a run in the set is
 *   built on, tests or merges (`merged` base PRs do not restart it), and of a PR named by a known
 *   bisection failure (`cleared`);
 * - every run in progress or asked to merge, the event's run, and the run of every entry in the set.
 * Concluded entries and finished runs outside it are read by nothing in the rules: they are
 * carried over unchanged, in place.
 */
import { isTerminal } from './model.js';
import type { EngineEvent, Entry, QueueModel, TestRun } from './types.js';

/** A model's working set: the smaller model, and where its entries and runs sit in the whole one. */
export interface WorkingSet {
  model: QueueModel;
  entryAt: number[];
  runAt: number[];
}

/** The working set of `model` for `event` (the whole model's arrays are left untouched). */
export function workingSet(model: QueueModel, event: EngineEvent): WorkingSet {
  const { entries, runs } = model;
  const inSet = new Uint8Array(entries.length);
  const prs = new Set<number>();
  const runIds = new Set<string>();
  if ('prNumber' in event && event.prNumber !== undefined) prs.add(event.prNumber);
  if ('runId' in event) runIds.add(event.runId);
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    if (isTerminal(e.state)) continue;
    inSet[i] = 1;
    if (e.testRunId) runIds.add(e.testRunId);
    const known = e.bisectKnownFailure;
    if (known) for (const pr of [...known.base, ...known.prs]) prs.add(pr);
  }
  const runIn = new Uint8Array(runs.length);
  const takeRuns = () => {
    for (let i = 0; i < runs.length; i++) {
      const r = runs[i];
      if (runIn[i] || !(r.status === 'in_progress' || r.mergeRequested || runIds.has(r.id))) continue;
      runIn[i] = 1;
      for (const pr of r.prNumbers) prs.add(pr);
      for (const pr of r.basePrNumbers) prs.add(pr);
      if (r.mergePrNumbers) for (const pr of r.mergePrNumbers) prs.add(pr);
    }
  };
  takeRuns();
  // Concluded entries of the PRs named so far, and then the runs those entries were in.
  let more = false;
  if (prs.size)
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      if (inSet[i] || !prs.has(e.prNumber)) continue;
      inSet[i] = 1;
      if (e.testRunId && !runIds.has(e.testRunId)) {
        runIds.add(e.testRunId);
        more = true;
      }
    }
  if (more) takeRuns();
  const entryAt: number[] = [];
  const setEntries: Entry[] = [];
  for (let i = 0; i < entries.length; i++)
    if (inSet[i]) {
      entryAt.push(i);
      setEntries.push(entries[i]);
    }
  const runAt: number[] = [];
  const setRuns: TestRun[] = [];
  for (let i = 0; i < runs.length; i++)
    if (runIn[i]) {
      runAt.push(i);
      setRuns.push(runs[i]);
    }
  return { model: { ...model, entries: setEntries, runs: setRuns }, entryAt, runAt };
}

/**
 * The whole model after a step on its working set: the set's entries and runs back in their places
 * (the rules replace them in place and only append new ones), the new ones after the rest.
 */
export function mergeWorkingSet(whole: QueueModel, set: WorkingSet, after: QueueModel): QueueModel {
  return {
    ...after,
    entries: putBack(whole.entries, set.entryAt, after.entries),
    runs: putBack(whole.runs, set.runAt, after.runs),
  };
}

function putBack<T>(whole: readonly T[], at: readonly number[], part: readonly T[]): T[] {
  const out = whole.slice();
  for (let i = 0; i < at.length; i++) out[at[i]] = part[i];
  for (let i = at.length; i < part.length; i++) out.push(part[i]);
  return out;
}

/** What changed between two copies of a queue's entries or runs (see `changedItems`). */
export interface ItemChanges<T> {
  /** Items of `after` that are not in `before`: new, or replacing an older copy. */
  upsert: T[];
  /** Per item of `upsert`: the copy it replaced (undefined for a new one). */
  previous: (T | undefined)[];
  /** Ids that `before` has and `after` has not. */
  remove: string[];
}

/**
 * What changed from `before` to `after` (entries, or runs, of one queue before and after steps):
 * steps replace items in place and append new ones, so this compares position by position (a
 * pointer comparison per item, whatever the history's length); arrays that differ in any other
 * way (another replica's copy, a reload) are compared by id.
 */
export function changedItems<T extends { id: string }>(before: readonly T[], after: readonly T[]): ItemChanges<T> {
  const upsert: T[] = [];
  const previous: (T | undefined)[] = [];
  let inPlace = after.length >= before.length;
  for (let i = 0; inPlace && i < before.length; i++) {
    const b = before[i];
    const a = after[i];
    if (a === b) continue;
    if (a.id !== b.id) inPlace = false;
    else {
      upsert.push(a);
      previous.push(b);
    }
  }
  if (inPlace) {
    for (let i = before.length; i < after.length; i++) {
      upsert.push(after[i]);
      previous.push(undefined);
    }
    return { upsert, previous, remove: [] };
  }
  const old = new Map(before.map((x) => [x.id, x]));
  const kept = new Set<string>();
  const changes: ItemChanges<T> = { upsert: [], previous: [], remove: [] };
  for (const a of after) {
    kept.add(a.id);
    const b = old.get(a.id);
    if (b === a) continue;
    changes.upsert.push(a);
    changes.previous.push(b);
  }
  for (const b of before) if (!kept.has(b.id)) changes.remove.push(b.id);
  return changes;
}
