/**
 * The working set of a step: the part of a queue model the rules can read or change. A queue keeps
 * every PR it ever had (concluded ones for its history and answers) and every run; the rules pass
 * over entries and runs several times per step, so a step on a queue with a long history cost time
 * in proportion to that history (20,000 concluded PRs made each submit cost ~15 ms and
 * the API stopped answering). `step` runs the rules on the working set and puts the result back
 * in place, so the cost of a step follows the PRs in the queue, not the PRs it ever held.
 *
 * What the rules read besides PRs in the queue, and so what the working set holds:
 * - every entry of a PR the event names (a command on a concluded PR is refused with its state; a
 *   resubmission reuses the impacted targets of the earlier one), of a PR a run in the set is
 *   built on, tests or merges (`merged` base PRs do not restart it), and of a PR named by a known
 *   bisection failure (`cleared`), and of the PR each PR in the queue is stacked on (rules/stacks.ts);
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

/**
 * What makes a working set cheap to find, kept per array of a queue model (arrays are never
 * changed once a model holds them; a step makes new ones): the positions of the open entries and
 * of the live runs (in progress or merging) of that very array, worked out from the previous
 * array's in mergeWorkingSet; and indexes by PR number and by run id, shared by every array that
 * grew from the same first one. Several arrays may grow from one (a step whose commit failed
 * is thrown away), so an index may hold positions that another array filled differently: every
 * lookup checks what it finds.
 */
const openAt = new WeakMap<readonly Entry[], number[]>();
const liveAt = new WeakMap<readonly TestRun[], number[]>();
const prIndexes = new WeakMap<readonly Entry[], Map<number, number[]>>();
const runIndexes = new WeakMap<readonly TestRun[], Map<string, number[]>>();

const isLive = (r: TestRun) => r.status === 'in_progress' || r.mergeRequested;

function positions<T>(items: readonly T[], keep: (item: T) => boolean): number[] {
  const out: number[] = [];
  for (let i = 0; i < items.length; i++) if (keep(items[i])) out.push(i);
  return out;
}

function indexOf<T, K>(
  cache: WeakMap<readonly T[], Map<K, number[]>>,
  items: readonly T[],
  key: (item: T) => K,
): Map<K, number[]> {
  let index = cache.get(items);
  if (!index) {
    index = new Map();
    for (let i = 0; i < items.length; i++) addTo(index, key(items[i]), i);
    cache.set(items, index);
  }
  return index;
}

function addTo<K>(index: Map<K, number[]>, k: K, at: number): void {
  const list = index.get(k);
  if (!list) index.set(k, [at]);
  else if (!list.includes(at)) list.push(at);
}

/** The working set of `model` for `event` (the whole model's arrays are left untouched). */
export function workingSet(model: QueueModel, event: EngineEvent): WorkingSet {
  const { entries, runs } = model;
  let open = openAt.get(entries);
  if (!open) openAt.set(entries, (open = positions(entries, (e) => !isTerminal(e.state))));
  let live = liveAt.get(runs);
  if (!live) liveAt.set(runs, (live = positions(runs, isLive)));
  const entryAt = new Set(open);
  const runAt = new Set(live);
  const prs = new Set<number>();
  const runIds: string[] = [];
  if ('prNumber' in event && event.prNumber !== undefined) prs.add(event.prNumber);
  if ('runId' in event) runIds.push(event.runId);
  for (const i of open) {
    const e = entries[i];
    if (e.testRunId) runIds.push(e.testRunId);
    const known = e.bisectKnownFailure;
    if (known) for (const pr of [...known.base, ...known.prs]) prs.add(pr);
    // A stacked PR leaves when the PR it is stacked on left (rules/stacks.ts).
    const on = e.pr.stackedOn;
    if (on !== undefined && on !== null) prs.add(on);
  }
  const byRun = indexOf(runIndexes, runs, (r) => r.id);
  const byPr = indexOf(prIndexes, entries, (e) => e.prNumber);
  const takeRuns = (ids: readonly string[]) => {
    for (const id of ids)
      for (const i of byRun.get(id) ?? []) if (i < runs.length && runs[i].id === id) runAt.add(i);
  };
  takeRuns(runIds);
  for (const i of runAt) {
    const r = runs[i];
    for (const pr of r.prNumbers) prs.add(pr);
    for (const pr of r.basePrNumbers) prs.add(pr);
    if (r.mergePrNumbers) for (const pr of r.mergePrNumbers) prs.add(pr);
  }
  // Concluded entries of the PRs named so far, and then the runs those entries were in.
  const more: string[] = [];
  for (const pr of prs)
    for (const i of byPr.get(pr) ?? []) {
      if (i >= entries.length || entries[i].prNumber !== pr || entryAt.has(i)) continue;
      entryAt.add(i);
      const runId = entries[i].testRunId;
      if (runId) more.push(runId);
    }
  takeRuns(more);
  const entryOrder = [...entryAt].sort((a, b) => a - b);
  const runOrder = [...runAt].sort((a, b) => a - b);
  return {
    model: { ...model, entries: entryOrder.map((i) => entries[i]), runs: runOrder.map((i) => runs[i]) },
    entryAt: entryOrder,
    runAt: runOrder,
  };
}

/**
 * The whole model after a step on its working set: the set's entries and runs back in their places
 * (the rules replace them in place and only append new ones), the new ones after the rest. The
 * new arrays inherit what makes the next working set cheap.
 */
export function mergeWorkingSet(whole: QueueModel, set: WorkingSet, after: QueueModel): QueueModel {
  const entries = putBack(whole.entries, set.entryAt, after.entries);
  const runs = putBack(whole.runs, set.runAt, after.runs);
  carry(
    openAt,
    prIndexes,
    whole.entries,
    entries,
    set.entryAt,
    (e) => !isTerminal(e.state),
    (e) => e.prNumber,
  );
  carry(liveAt, runIndexes, whole.runs, runs, set.runAt, isLive, (r) => r.id);
  return { ...after, entries, runs };
}

function putBack<T>(whole: readonly T[], at: readonly number[], part: readonly T[]): T[] {
  // One copy of the right size (pushing onto a copy of a long history made V8 copy it again).
  const out = part.length > at.length ? whole.concat(part.slice(at.length)) : whole.slice();
  for (let i = 0; i < at.length; i++) out[at[i]] = part[i];
  return out;
}

/**
 * The positions of `next`'s open entries (live runs) from those of the set it was stepped on (a
 * superset of `previous`'s) and what was appended; its index is `previous`'s with the appended ones.
 */
function carry<T, K>(
  kept: WeakMap<readonly T[], number[]>,
  indexes: WeakMap<readonly T[], Map<K, number[]>>,
  previous: readonly T[],
  next: readonly T[],
  setAt: readonly number[],
  keep: (item: T) => boolean,
  key: (item: T) => K,
): void {
  const at: number[] = [];
  for (const i of setAt) if (keep(next[i])) at.push(i);
  for (let i = previous.length; i < next.length; i++) if (keep(next[i])) at.push(i);
  kept.set(next, at);
  const index = indexes.get(previous);
  if (!index) return;
  for (let i = previous.length; i < next.length; i++) addTo(index, key(next[i]), i);
  indexes.set(next, index);
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
export function changedItems<T extends { id: string }>(
  before: readonly T[],
  after: readonly T[],
): ItemChanges<T> {
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
