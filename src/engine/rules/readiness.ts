/**
 * Readiness: a submitted PR waits outside the queue (`not_ready`) until it targets the queue's
 * branch, the forge calls it mergeable and its branch protection lets it through, and (parallel mode) its impacted targets are known. Then
 * it is admitted (`pending`) while the queue takes new work (running or paused); a pending PR that
 * stops being ready goes back out. A stacked PR (stacks.ts) targets the branch when the bottom of
 * its stack does, and a stack is admitted only as a whole: every PR of it ready. A mode switch
 * completes once nothing is admitted any more.
 */
import type { Readiness, WaitReason } from '../../contract/index.js';
import { isTerminal } from '../model.js';
import type { Entry, PrConflict, PrFacts, QueueModel } from '../types.js';
import { Stacks } from './stacks.js';
import type { WorkingCopy } from '../working-copy.js';

/** Readiness as the contract reports it, with what the PR waits for while it is in the queue (an extension). */
export function readinessOf(model: QueueModel, entry: Entry): Readiness {
  const stacked = entry.pr.stackedOn !== undefined && entry.pr.stackedOn !== null;
  const readiness = facts(model, entry, stacked ? new Stacks(model.entries) : undefined);
  if (!isTerminal(entry.state)) readiness.waitingFor = waitingFor(model, entry, readiness);
  return readiness;
}

/** The readiness fields of the v1 contract. */
function facts(model: QueueModel, entry: Entry, stacks?: Stacks): Readiness {
  // A stacked PR is based on the PR below it: its stack's bottom says whether it targets the branch.
  const bottom = stacks?.any && !isTerminal(entry.state) ? stacks.root(entry) : entry;
  return {
    hasImpactedTargets: entry.impactedTargets !== null,
    requiresImpactedTargets: model.config.mode === 'parallel',
    doesBaseBranchMatch: bottom !== undefined && bottom.pr.baseBranch === model.branch,
    gitHubMergeability: entry.pr.mergeability,
    ...(entry.pr.blockedBy ? { blockedBy: entry.pr.blockedBy } : {}),
    ...(entry.pr.mergeability === 'not_mergeable' && entry.pr.conflict
      ? { conflict: { message: prConflictSentence(entry.pr)!, ...entry.pr.conflict } }
      : {}),
  };
}

/** The conflict sentence of a PR that does not merge onto its base (undefined when it does, or the forge cannot tell). */
export function prConflictSentence(pr: PrFacts): string | undefined {
  return pr.mergeability === 'not_mergeable' && pr.conflict
    ? conflictSentence(pr.baseBranch, pr.conflict)
    : undefined;
}

/** How many conflicting files the sentence names before "and N more". */
const FILES_NAMED = 5;

/**
 * The one sentence every view shows for a conflicting PR (`mq status`, `mq watch`, the forge
 * comment, the dashboard): what it conflicts with and what to do. With the files (git forge):
 * `conflicts with main in a.txt, b.txt (changed by abc1234 'subject' / #7): rebase on main`;
 * without (GitHub, GitLab): `conflicts with main: rebase or merge main into the branch`.
 */
export function conflictSentence(base: string, conflict: PrConflict): string {
  const files = conflict.files ?? [];
  if (!files.length) return `conflicts with ${base}: rebase or merge ${base} into the branch`;
  const named =
    files.slice(0, FILES_NAMED).join(', ') +
    (files.length > FILES_NAMED ? ` and ${files.length - FILES_NAMED} more` : '');
  const c = conflict.commit;
  const by = c
    ? ` (changed by ${c.sha.slice(0, 7)} '${c.subject}'${c.prNumber !== undefined ? ` / #${c.prNumber}` : ''})`
    : '';
  return `conflicts with ${base} in ${named}${by}: rebase on ${base}`;
}

function isReady(model: QueueModel, entry: Entry, stacks: Stacks): boolean {
  const own = (e: Entry) => prWaitsFor(facts(model, e, stacks), e.direct === true).length === 0;
  return stacks.stacked(entry) ? stacks.members(entry).every(own) : own(entry);
}

/**
 * What the PR itself lacks to enter the queue. A `direct` PR skips the forge's own requirements
 * (mergeability, branch rules): only the queue's (its base branch, impacted targets) hold it.
 */
function prWaitsFor(r: Readiness, direct = false): WaitReason[] {
  const out: WaitReason[] = [];
  if (!r.doesBaseBranchMatch) out.push('base_branch');
  if (direct) {
    // past the forge's requirements
  } else if (r.gitHubMergeability !== 'mergeable') out.push('mergeability');
  else if (r.blockedBy) out.push('branch_protection');
  if (r.requiresImpactedTargets && !r.hasImpactedTargets) out.push('impacted_targets');
  return out;
}

/**
 * Why a PR in the queue waits, besides the runs ahead of it: what it lacks to enter (while
 * `not_ready`), and the queue's state — paused starts and merges nothing, so every PR waits;
 * draining or switching modes admits no new PR, so one not admitted yet waits for it to run again.
 */
function waitingFor(model: QueueModel, entry: Entry, r: Readiness): WaitReason[] {
  const notReady = entry.state === 'not_ready';
  const out = notReady ? prWaitsFor(r, entry.direct === true) : [];
  const state = model.config.state;
  if (state === 'paused') out.push('queue_paused');
  else if (notReady && state === 'draining') out.push('queue_draining');
  else if (notReady && state === 'switching_modes') out.push('queue_switching_modes');
  return out;
}

/** Whether PRs are admitted (pending or further): not-ready PRs wait outside and do not hold a mode switch. */
export function hasAdmittedWork(model: QueueModel): boolean {
  return model.entries.some((e) => !isTerminal(e.state) && e.state !== 'not_ready');
}

/** Whether the queue admits a not-ready entry into pending now. */
function admitsNewWork(model: QueueModel): boolean {
  return model.config.state === 'running' || model.config.state === 'paused';
}

/** Admits the ready PRs and sends pending PRs that are no longer ready back out. */
export function applyReadiness(w: WorkingCopy): void {
  // One snapshot for the loop: readiness reads only the branch and the config, which setState leaves alone.
  const model = w.model;
  const admits = admitsNewWork(model);
  const stacks = new Stacks(w.entries);
  for (const entry of [...w.entries]) {
    if (isTerminal(entry.state)) continue;
    const ready = isReady(model, entry, stacks);
    if (entry.state === 'not_ready' && ready && admits) {
      w.setState(
        entry,
        'pending',
        entry.reason === 'API_REQUESTED' ? 'API_REQUESTED' : 'MERGE_ITEM_NOW_READY',
      );
    } else if (entry.state === 'pending' && !ready) {
      w.setState(entry, 'not_ready', 'AWAITING_READINESS');
    }
  }
}

/** A pending mode switch (`switching_modes`) flips the mode once no PR is admitted. */
export function completeModeSwitch(w: WorkingCopy): void {
  if (w.config.pendingMode !== null && !hasAdmittedWork(w.model)) {
    const state = w.config.state === 'switching_modes' ? 'running' : w.config.state;
    w.config = { ...w.config, state, mode: w.config.pendingMode, pendingMode: null };
  }
}
