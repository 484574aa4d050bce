/**
 * Stacked PRs: a PR whose base branch is another open PR's head branch is stacked on it (the
 * forge says on which: `PrFacts.stackedOn`). The PRs of one stack in the queue — every queued PR
 * linked to another by "stacked on" — are one unit: admitted together (readiness.ts), tested in one
 * run bottom first (scheduling.ts), never split by bisection (bisection.ts), landed in one merge
 * (merging.ts), never partly. When a PR of a stack leaves the queue without landing with the PRs
 * above it, those leave too, with Trunk's reasons (`STACKED_PR_MEMBER_PUSHED_TO`, `_CLOSED`,
 * `_MERGED`, `_BASE_BRANCH_CHANGED`); the PRs below it stay, a stack of their own.
 */
import type { CancellationReason, FailureReason } from '../../contract/index.js';
import { IN_RUN, isTerminal } from '../model.js';
import type { Entry, QueueModel } from '../types.js';
import type { WorkingCopy } from '../working-copy.js';

/** The stacks among the PRs in the queue (built from one list of entries; nothing here changes them). */
export class Stacks {
  private readonly byPr = new Map<number, Entry>();
  private readonly above = new Map<number, Entry[]>();
  /** Some PR in the queue is stacked on another PR in the queue. */
  readonly any: boolean;

  /** `concluded`: take every entry given (the PRs of one finished run), not only those in the queue. */
  constructor(entries: readonly Entry[], concluded = false) {
    for (const e of entries) if (concluded || !isTerminal(e.state)) this.byPr.set(e.prNumber, e);
    let any = false;
    for (const e of this.byPr.values()) {
      const on = this.below(e);
      if (!on) continue;
      any = true;
      const list = this.above.get(on.prNumber);
      if (list) list.push(e);
      else this.above.set(on.prNumber, [e]);
    }
    this.any = any;
  }

  /** The PR in the queue that `entry` is stacked on, if any. */
  below(entry: Entry): Entry | undefined {
    const on = entry.pr.stackedOn;
    if (on === undefined || on === null || on === entry.prNumber) return undefined;
    return this.byPr.get(on);
  }

  /** The bottom PR of `entry`'s stack (itself when it is stacked on nothing in the queue); undefined for a cycle. */
  root(entry: Entry): Entry | undefined {
    const seen = new Set<number>();
    let at = entry;
    for (;;) {
      if (seen.has(at.prNumber)) return undefined;
      seen.add(at.prNumber);
      const next = this.below(at);
      if (!next) return at;
      at = next;
    }
  }

  /** How many PRs are below `entry` in its stack. */
  private depth(entry: Entry): number {
    let n = 0;
    let at: Entry | undefined = entry;
    const seen = new Set<number>();
    while (at && !seen.has(at.prNumber)) {
      seen.add(at.prNumber);
      at = this.below(at);
      if (at) n++;
    }
    return n;
  }

  /** Whether `entry` is in a stack of two PRs or more. */
  stacked(entry: Entry): boolean {
    return this.any && (this.below(entry) !== undefined || (this.above.get(entry.prNumber)?.length ?? 0) > 0);
  }

  /** The PRs of `entry`'s stack in the queue, bottom first (then by submission); `[entry]` when it is not stacked. */
  members(entry: Entry): Entry[] {
    if (!this.stacked(entry)) return [entry];
    const found = new Map<number, Entry>([[entry.prNumber, entry]]);
    const todo = [entry];
    while (todo.length) {
      const e = todo.pop() as Entry;
      const linked = [...(this.above.get(e.prNumber) ?? [])];
      const on = this.below(e);
      if (on) linked.push(on);
      for (const o of linked) {
        if (found.has(o.prNumber)) continue;
        found.set(o.prNumber, o);
        todo.push(o);
      }
    }
    const depth = new Map([...found.values()].map((e) => [e.prNumber, this.depth(e)] as const));
    return [...found.values()].sort(
      (a, b) => (depth.get(a.prNumber) as number) - (depth.get(b.prNumber) as number) || a.seq - b.seq,
    );
  }
}

/**
 * The PRs of `entry`'s stack, bottom first, for people: its stack in the queue while it is in it;
 * once it left, the PRs of its last run that left the same way linked to it. [] when not stacked.
 */
export function stackOf(model: QueueModel, entry: Entry): number[] {
  const stacks = isTerminal(entry.state)
    ? new Stacks(
        model.entries.filter(
          (e) => e.testRunId !== null && e.testRunId === entry.testRunId && e.state === entry.state,
        ),
        true,
      )
    : new Stacks(model.entries);
  return stacks.stacked(entry) ? stacks.members(entry).map((e) => e.prNumber) : [];
}

/** A stack for people, bottom first: `stack of 3: #4 ← #5 ← #6` (`ref` names a PR the forge's way). */
export function stackSentence(
  prNumbers: readonly number[],
  ref: (n: number) => string = (n) => `#${n}`,
): string {
  return `stack of ${prNumbers.length}: ${prNumbers.map(ref).join(' ← ')}`;
}

/**
 * Splits the members of a unit (in queue order) into blocks that may be tested apart: a PR alone,
 * or a whole stack. Bisection splits a failed unit between blocks, never inside one.
 */
export function blocksOf(stacks: Stacks, members: readonly Entry[]): Entry[][] {
  const blocks: Entry[][] = [];
  const blockOf = new Map<number, Entry[]>();
  for (const m of members) {
    const root = stacks.stacked(m) ? (stacks.root(m)?.prNumber ?? m.prNumber) : undefined;
    const existing = root === undefined ? undefined : blockOf.get(root);
    if (existing) existing.push(m);
    else {
      const block = [m];
      blocks.push(block);
      if (root !== undefined) blockOf.set(root, block);
    }
  }
  return blocks;
}

/** `members` with the PRs of each stack bottom first, at the place of the first of them. */
export function inStackOrder(stacks: Stacks, members: readonly Entry[]): Entry[] {
  if (!stacks.any) return [...members];
  const ids = new Set(members.map((m) => m.id));
  const out: Entry[] = [];
  const done = new Set<string>();
  for (const m of members) {
    if (done.has(m.id)) continue;
    for (const s of stacks.members(m)) {
      if (!ids.has(s.id) || done.has(s.id)) continue;
      done.add(s.id);
      out.push(members.find((x) => x.id === s.id) as Entry);
    }
  }
  return out;
}

/** The reason a PR above `below` leaves with, when `below` left the queue without it. */
function passedOn(
  below: Entry,
): { state: 'cancelled'; reason: CancellationReason } | { state: 'failed'; reason: FailureReason } {
  if (below.state === 'failed')
    return {
      state: 'failed',
      reason: (below.reason as FailureReason | null) ?? 'TEST_RUN_REQUIRED_STATUS_FAILED',
    };
  if (below.state === 'merged' || below.pr.merged)
    return { state: 'cancelled', reason: 'STACKED_PR_MEMBER_MERGED' };
  switch (below.reason) {
    case 'PR_CLOSED':
      return { state: 'cancelled', reason: 'STACKED_PR_MEMBER_CLOSED' };
    case 'PR_PUSHED_TO':
      return { state: 'cancelled', reason: 'STACKED_PR_MEMBER_PUSHED_TO' };
    case 'PR_BASE_BRANCH_CHANGED':
      return { state: 'cancelled', reason: 'STACKED_PR_MEMBER_BASE_BRANCH_CHANGED' };
    default:
      return { state: 'cancelled', reason: (below.reason as CancellationReason | null) ?? 'USER_REQUESTED' };
  }
}

/**
 * Keeps each stack one unit. A PR whose stack member below it left the queue after it was
 * submitted leaves too (with that member's reason, as a stack reason). A stack whose PRs are not
 * all in one run — a PR joined it, or one came back — restarts the runs that hold part of it, so
 * that it is tested again as a whole; a run already landing is left to land.
 */
export function applyStacks(w: WorkingCopy): void {
  if (!w.entries.some((e) => e.pr.stackedOn !== undefined && e.pr.stackedOn !== null && !isTerminal(e.state)))
    return;
  // Leaving: follow each stack upwards from a member that left.
  for (const e of [...w.entries]) {
    if (isTerminal(e.state)) continue;
    const on = e.pr.stackedOn;
    if (on === undefined || on === null || on === e.prNumber) continue;
    const below = w.find(on);
    if (!below || !isTerminal(below.state) || below.concludedAt === null || below.concludedAt < e.submittedAt)
      continue;
    const current = w.current(e);
    if (current.testRunId && IN_RUN.has(current.state) && w.run(current.testRunId)?.mergeRequested) continue;
    const exit = passedOn(below);
    w.setState(current, exit.state, exit.reason);
  }
  const stacks = new Stacks(w.entries);
  if (!stacks.any) return;
  const units = w.units();
  const unitOf = new Map<string, (typeof units)[number]>();
  for (const u of units) for (const m of u.members) unitOf.set(m.id, u);
  const seen = new Set<number>();
  for (const e of w.entries) {
    if (isTerminal(e.state) || seen.has(e.prNumber) || !stacks.stacked(e)) continue;
    const members = stacks.members(e);
    for (const m of members) seen.add(m.prNumber);
    const held = new Set(members.map((m) => unitOf.get(m.id)).filter((u) => u !== undefined));
    if ([...held].some((u) => u.run.mergeRequested)) continue;
    // A bisection or probation group holding part of a stack: the stack goes back to the line whole.
    const split = new Set(members.map((m) => m.bisectGroup ?? null)).size > 1;
    const [only] = held;
    const whole = held.size === 1 && members.every((m) => only.members.some((x) => x.id === m.id));
    if (!split && (held.size === 0 || whole)) continue;
    for (const u of held) w.restartUnit(u, 'MERGE_ITEM_NOW_READY');
    if (split)
      for (const m of members)
        w.update(w.current(m), {
          bisectGroup: null,
          bisectKnownFailure: null,
          ...(m.probation === 'testing' ? { probation: null } : {}),
        });
  }
}
