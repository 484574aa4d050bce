/**
 * Commands: what people and the forge ask of a queue (submit, cancel, restart, impacted targets,
 * PR facts, settings). Each changes the working copy directly; `settle` then draws the
 * consequences. A command that cannot apply throws an EngineRejection, which becomes a 4xx answer.
 */
import { resolvePriority } from '../../contract/index.js';
import { findEntry, IN_RUN, isTerminal } from '../model.js';
import { hasAdmittedWork } from '../rules/readiness.js';
import {
  EngineRejection,
  type CancelEvent,
  type Entry,
  type ImpactedTargetsEvent,
  type PrUpdatedEvent,
  type QueueConfig,
  type RestartEvent,
  type SubmitEvent,
  type UpdateConfigEvent,
} from '../types.js';
import type { WorkingCopy } from '../working-copy.js';

/** A new submission enters `not_ready`; resubmitting a queued PR rewrites its priority and batching, nothing else. */
export function submit(
  w: WorkingCopy,
  { prNumber, pr, priority, noBatch, riskEstimate, direct }: SubmitEvent,
): void {
  const existing = findEntry(w.model, prNumber);
  if (existing && !isTerminal(existing.state)) {
    const patch: Partial<Entry> = { pr };
    if (priority) patch.priority = priority;
    if (noBatch !== undefined) patch.noBatch = noBatch;
    if (riskEstimate !== undefined) patch.riskEstimate = riskEstimate;
    if (direct !== undefined) patch.direct = direct;
    w.update(existing, patch);
    return;
  }
  const now = w.ctx.now;
  w.add({
    id: w.ctx.newId(),
    prNumber,
    state: 'not_ready',
    reason: 'API_REQUESTED',
    stateChangedAt: now,
    submittedAt: now,
    seq: w.nextSeq++,
    priority: priority ?? resolvePriority(undefined),
    noBatch: noBatch ?? false,
    pr,
    // Impacted targets belong to a head SHA: an earlier submission's list still counts for the same SHA.
    impactedTargets: existing && existing.pr.headSha === pr.headSha ? existing.impactedTargets : null,
    testRunId: null,
    admittedAt: null,
    testingStartedAt: null,
    concludedAt: null,
    restarts: 0,
    bisectGroup: null,
    bisectKnownFailure: null,
    bisected: false,
    ...(riskEstimate !== undefined && riskEstimate !== null ? { riskEstimate } : {}),
    ...(direct ? { direct: true } : {}),
  });
}

export function cancel(w: WorkingCopy, { prNumber, reason }: CancelEvent): void {
  const entry = w.active(prNumber);
  w.setState(entry, 'cancelled', reason);
}

/** The PR's unit (or the PR alone, when it is not in a run) goes back to pending; a PR being merged cannot restart. */
export function restart(w: WorkingCopy, { prNumber, reason }: RestartEvent): void {
  const entry = w.active(prNumber);
  if (entry.state === 'not_ready') return; // nothing to restart: it has not been admitted yet
  const unit =
    entry.testRunId && IN_RUN.has(entry.state)
      ? w.units().find((u) => u.run.id === entry.testRunId)
      : undefined;
  if (unit) {
    if (unit.run.mergeRequested)
      throw new EngineRejection('conflict', `pull request #${prNumber} is being merged`);
    w.restartUnit(unit, reason);
    return;
  }
  w.setState(entry, 'pending', reason, { testingStartedAt: null });
}

export function impactedTargets(w: WorkingCopy, { prNumber, sha, targets }: ImpactedTargetsEvent): void {
  const entry = findEntry(w.model, prNumber);
  if (!entry)
    throw new EngineRejection(
      'not_found',
      `pull request #${prNumber} was never submitted to the ${w.original.branch} queue`,
    );
  // Targets are per head SHA: the last upload for the current head wins; an upload for another SHA is ignored.
  if (entry.pr.headSha !== sha) return;
  w.update(entry, { impactedTargets: targets });
}

/**
 * New facts from the forge: a closed PR, a push to it, or a new base branch cancels it — except a push
 * to a PR waiting on a conflict with its base, which is checked again.
 */
export function prUpdated(w: WorkingCopy, { prNumber, pr: given }: PrUpdatedEvent): void {
  const entry = findEntry(w.model, prNumber);
  if (!entry || isTerminal(entry.state)) return;
  // The PR below it closed or merged: the forge no longer calls it stacked, but it is still based
  // on that PR's branch, so it stays linked and leaves with it (rules/stacks.ts).
  const below = entry.pr.stackedOn;
  const pr =
    below !== undefined && given.stackedOn === undefined && given.baseBranch === entry.pr.baseBranch
      ? { ...given, stackedOn: below }
      : given;
  if (!pr.open) {
    w.setState(entry, 'cancelled', 'PR_CLOSED', { pr });
    return;
  }
  if (pr.headSha !== entry.pr.headSha) {
    // A PR waiting because it conflicts with its base is pushed to to resolve it: checked again, not cancelled.
    if (
      entry.state === 'not_ready' &&
      entry.pr.mergeability === 'not_mergeable' &&
      pr.baseBranch === entry.pr.baseBranch
    ) {
      // Impacted targets belong to a head: the new head's are uploaded again.
      w.update(entry, { pr, impactedTargets: null });
      return;
    }
    w.setState(entry, 'cancelled', 'PR_PUSHED_TO', { pr });
    return;
  }
  if (pr.baseBranch !== entry.pr.baseBranch && entry.state !== 'not_ready') {
    w.setState(entry, 'cancelled', 'PR_BASE_BRANCH_CHANGED', { pr });
    return;
  }
  w.update(entry, { pr });
}

/** Copies a field of a settings patch onto a config unless the patch leaves it undefined (a patch's fields are config fields). */
function setIfDefined<K extends keyof QueueConfig>(
  next: QueueConfig,
  patch: Partial<QueueConfig>,
  key: K,
): void {
  const value = patch[key];
  if (value !== undefined) next[key] = value;
}

/** Applies a settings patch; a mode change on a queue with admitted PRs goes through `switching_modes`. */
export function updateConfig(w: WorkingCopy, { patch }: UpdateConfigEvent): void {
  const { deleteRequiredStatuses, ...fields } = patch;
  const next: QueueConfig = { ...w.config };
  for (const key of Object.keys(fields) as (keyof typeof fields)[]) setIfDefined(next, fields, key);
  if (
    fields.requiredStatuses !== undefined &&
    fields.requiredStatuses !== null &&
    fields.requiredStatuses.length === 0
  ) {
    next.requiredStatuses = w.config.requiredStatuses; // [] is ignored: deleteRequiredStatuses drops the override
  }
  if (deleteRequiredStatuses) next.requiredStatuses = null;
  if (fields.bisectionConcurrency !== undefined) next.bisectionConcurrencySet = true;
  else if (!next.bisectionConcurrencySet) next.bisectionConcurrency = next.concurrency;

  // A mode change on a non-empty queue goes through switching_modes and flips once empty.
  if (w.config.state === 'switching_modes' && fields.state === undefined) next.state = 'switching_modes';
  if (fields.mode !== undefined) {
    if (fields.mode === w.config.mode) {
      // Switching back to the current mode cancels a pending switch.
      if (next.pendingMode !== null) {
        next.pendingMode = null;
        if (next.state === 'switching_modes') next.state = 'running';
      }
    } else if (hasAdmittedWork(w.model)) {
      next.mode = w.config.mode;
      next.pendingMode = fields.mode;
      if (fields.state === undefined) next.state = 'switching_modes';
    } else {
      next.pendingMode = null;
    }
  }
  w.config = next;
}
