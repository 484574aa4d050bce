import { resolvePriority, TERMINAL_STATES, type Mode, type PullRequestState, type Readiness } from '../contract/index.js';
import {
  EngineRejection,
  type ConfigPatch,
  type Effect,
  type EngineEvent,
  type Entry,
  type QueueConfig,
  type QueueModel,
  type ReasonCode,
  type StepContext,
  type StepResult,
} from './types.js';

/** The defaults of a new queue (docs/decisions.md, "createQueue defaults"). */
export function defaultConfig(mode: Mode = 'single', concurrency = 1): QueueConfig {
  return {
    state: 'running',
    mode,
    pendingMode: null,
    concurrency,
    bisectionConcurrency: concurrency,
    bisectionConcurrencySet: false,
    testingTimeoutMinutes: 300,
    pendingFailureDepth: 0,
    canOptimisticallyMerge: false,
    batch: false,
    batchingMinSize: 4,
    batchingMaxWaitTimeMinutes: 5,
    requiredStatuses: null,
    directMergeMode: 'off',
    optimizationMode: 'off',
    mergeMethod: 'squash',
    createPrsForTestingBranches: true,
    commentsEnabled: true,
    commandsEnabled: true,
    statusCheckEnabled: true,
    extensionEnabled: true,
    enqueueingLabel: 'railyard-merge-queue-submit',
    labelCommandsEnabled: true,
    stateLabelsEnabled: false,
  };
}

export function newQueueModel(branch: string, mode?: Mode, concurrency?: number): QueueModel {
  return { branch, config: defaultConfig(mode, concurrency), entries: [], runs: [], nextSeq: 1 };
}

export const isTerminal = (state: PullRequestState): boolean => TERMINAL_STATES.includes(state);

/** Entries still in the queue (not terminal), in queue order: priority value, then submission. */
export function activeEntries(model: QueueModel): Entry[] {
  return model.entries.filter((e) => !isTerminal(e.state)).sort(compareEntries);
}

export function compareEntries(a: Entry, b: Entry): number {
  return a.priority.value - b.priority.value || a.seq - b.seq;
}

/** The current entry of a PR: the active one, else the most recent submission. */
export function findEntry(model: QueueModel, prNumber: number): Entry | undefined {
  let latest: Entry | undefined;
  for (const e of model.entries) {
    if (e.prNumber !== prNumber) continue;
    if (!isTerminal(e.state)) return e;
    if (!latest || e.seq > latest.seq) latest = e;
  }
  return latest;
}

/** Readiness as the contract reports it. */
export function readinessOf(model: QueueModel, entry: Entry): Readiness {
  const requiresImpactedTargets = model.config.mode === 'parallel';
  return {
    hasImpactedTargets: entry.impactedTargets !== null,
    requiresImpactedTargets,
    doesBaseBranchMatch: entry.pr.baseBranch === model.branch,
    gitHubMergeability: entry.pr.mergeability,
  };
}

function isReady(model: QueueModel, entry: Entry): boolean {
  const r = readinessOf(model, entry);
  return (
    r.doesBaseBranchMatch && r.gitHubMergeability === 'mergeable' && (!r.requiresImpactedTargets || r.hasImpactedTargets === true)
  );
}

/** Whether the queue admits a not-ready entry into pending now. */
function admitsNewWork(model: QueueModel): boolean {
  return model.config.state === 'running';
}

/**
 * Applies one event. Pure: the same (model, event, ctx) always gives the same result.
 * Throws EngineRejection for commands that cannot apply (unknown PR, terminal entry).
 */
export function step(model: QueueModel, event: EngineEvent, ctx: StepContext): StepResult {
  const tx = new Transition(model, ctx);
  switch (event.type) {
    case 'submit':
      tx.submit(event.prNumber, event.pr, event.priority, event.noBatch);
      break;
    case 'cancel':
      tx.cancel(event.prNumber, event.reason);
      break;
    case 'restart':
      tx.restart(event.prNumber, event.reason);
      break;
    case 'impactedTargets':
      tx.impactedTargets(event.prNumber, event.sha, event.targets);
      break;
    case 'prUpdated':
      tx.prUpdated(event.prNumber, event.pr);
      break;
    case 'updateConfig':
      tx.updateConfig(event.patch);
      break;
    case 'tick':
      break;
  }
  tx.settle();
  return tx.result();
}

/** Mutable working copy of a model for one step; entries are copied on first write. */
class Transition {
  private readonly entries: Entry[];
  private config: QueueConfig;
  private nextSeq: number;
  private readonly effects: Effect[] = [];

  constructor(
    private readonly original: QueueModel,
    private readonly ctx: StepContext,
  ) {
    this.entries = [...original.entries];
    this.config = original.config;
    this.nextSeq = original.nextSeq;
  }

  result(): StepResult {
    return {
      model: { ...this.original, config: this.config, entries: this.entries, nextSeq: this.nextSeq },
      effects: this.effects,
    };
  }

  private get model(): QueueModel {
    return { ...this.original, config: this.config, entries: this.entries, nextSeq: this.nextSeq };
  }

  private update(entry: Entry, patch: Partial<Entry>): Entry {
    const index = this.entries.indexOf(entry);
    const next = { ...entry, ...patch };
    this.entries[index] = next;
    return next;
  }

  private setState(entry: Entry, to: PullRequestState, reason: ReasonCode | null, extra: Partial<Entry> = {}): Entry {
    const now = this.ctx.now;
    const patch: Partial<Entry> = { state: to, reason, stateChangedAt: now, ...extra };
    if (to === 'pending' && entry.admittedAt === null) patch.admittedAt = now;
    if (isTerminal(to)) patch.concludedAt = now;
    this.effects.push({ type: 'stateChanged', entryId: entry.id, prNumber: entry.prNumber, from: entry.state, to, reason });
    return this.update(entry, patch);
  }

  private active(prNumber: number): Entry {
    const entry = findEntry(this.model, prNumber);
    if (!entry) throw new EngineRejection('not_found', `pull request #${prNumber} was never submitted to the ${this.original.branch} queue`);
    if (isTerminal(entry.state))
      throw new EngineRejection('invalid', `pull request #${prNumber} is not in the queue: it is ${entry.state}`);
    return entry;
  }

  submit(prNumber: number, pr: Entry['pr'], priority: Entry['priority'] | undefined, noBatch: boolean | undefined): void {
    const existing = findEntry(this.model, prNumber);
    if (existing && !isTerminal(existing.state)) {
      // Resubmitting a queued PR rewrites its priority and batching, nothing else.
      const patch: Partial<Entry> = { pr };
      if (priority) patch.priority = priority;
      if (noBatch !== undefined) patch.noBatch = noBatch;
      this.update(existing, patch);
      return;
    }
    const now = this.ctx.now;
    const entry: Entry = {
      id: this.ctx.newId(),
      prNumber,
      state: 'not_ready',
      reason: 'API_REQUESTED',
      stateChangedAt: now,
      submittedAt: now,
      seq: this.nextSeq++,
      priority: priority ?? resolvePriority(undefined),
      noBatch: noBatch ?? false,
      pr,
      // Impacted targets belong to a head SHA: an earlier submission's list still counts for the same SHA.
      impactedTargets: existing && existing.pr.headSha === pr.headSha ? existing.impactedTargets : null,
      testRunId: null,
      admittedAt: null,
      testingStartedAt: null,
      concludedAt: null,
    };
    this.entries.push(entry);
    this.effects.push({ type: 'stateChanged', entryId: entry.id, prNumber, from: null, to: 'not_ready', reason: 'API_REQUESTED' });
  }

  cancel(prNumber: number, reason: Entry['reason'] & string): void {
    const entry = this.active(prNumber);
    this.setState(entry, 'cancelled', reason);
  }

  restart(prNumber: number, reason: Entry['reason'] & string): void {
    const entry = this.active(prNumber);
    if (entry.state === 'not_ready') return; // nothing to restart: it has not been admitted yet
    this.setState(entry, 'pending', reason, { testRunId: null, testingStartedAt: null });
  }

  impactedTargets(prNumber: number, sha: string, targets: Entry['impactedTargets']): void {
    const entry = findEntry(this.model, prNumber);
    if (!entry) throw new EngineRejection('not_found', `pull request #${prNumber} was never submitted to the ${this.original.branch} queue`);
    // Targets are per head SHA: the last upload for the current head wins; an upload for another SHA is ignored.
    if (entry.pr.headSha !== sha) return;
    this.update(entry, { impactedTargets: targets });
  }

  prUpdated(prNumber: number, pr: Entry['pr']): void {
    const entry = findEntry(this.model, prNumber);
    if (!entry || isTerminal(entry.state)) return;
    if (!pr.open) {
      this.setState(entry, 'cancelled', 'PR_CLOSED', { pr });
      return;
    }
    if (pr.headSha !== entry.pr.headSha) {
      this.setState(entry, 'cancelled', 'PR_PUSHED_TO', { pr });
      return;
    }
    if (pr.baseBranch !== entry.pr.baseBranch && entry.state !== 'not_ready') {
      this.setState(entry, 'cancelled', 'PR_BASE_BRANCH_CHANGED', { pr });
      return;
    }
    this.update(entry, { pr });
  }

  updateConfig(patch: ConfigPatch): void {
    const { deleteRequiredStatuses, ...fields } = patch;
    const next: QueueConfig = { ...this.config };
    for (const [key, value] of Object.entries(fields) as [keyof typeof fields, unknown][]) {
      if (value === undefined) continue;
      (next as unknown as Record<string, unknown>)[key] = value;
    }
    if (fields.requiredStatuses !== undefined && fields.requiredStatuses !== null && fields.requiredStatuses.length === 0) {
      next.requiredStatuses = this.config.requiredStatuses; // [] is ignored: deleteRequiredStatuses drops the override
    }
    if (deleteRequiredStatuses) next.requiredStatuses = null;
    if (fields.bisectionConcurrency !== undefined) next.bisectionConcurrencySet = true;
    else if (!next.bisectionConcurrencySet) next.bisectionConcurrency = next.concurrency;

    // A mode change on a non-empty queue goes through switching_modes and flips once empty.
    if (this.config.state === 'switching_modes' && fields.state === undefined) next.state = 'switching_modes';
    if (fields.mode !== undefined) {
      if (fields.mode === this.config.mode) {
        // Switching back to the current mode cancels a pending switch.
        if (next.pendingMode !== null) {
          next.pendingMode = null;
          if (next.state === 'switching_modes') next.state = 'running';
        }
      } else if (activeEntries(this.model).length > 0) {
        next.mode = this.config.mode;
        next.pendingMode = fields.mode;
        if (fields.state === undefined) next.state = 'switching_modes';
      } else {
        next.pendingMode = null;
      }
    }
    this.config = next;
  }

  /** Re-evaluates readiness and the mode switch after any event. */
  settle(): void {
    const admits = admitsNewWork(this.model);
    for (const entry of [...this.entries]) {
      if (isTerminal(entry.state)) continue;
      const ready = isReady(this.model, entry);
      if (entry.state === 'not_ready' && ready && admits) {
        this.setState(entry, 'pending', entry.reason === 'API_REQUESTED' ? 'API_REQUESTED' : 'MERGE_ITEM_NOW_READY');
      } else if (entry.state === 'pending' && !ready) {
        this.setState(entry, 'not_ready', 'AWAITING_READINESS');
      }
    }
    if (this.config.pendingMode !== null && activeEntries(this.model).length === 0) {
      const state = this.config.state === 'switching_modes' ? 'running' : this.config.state;
      this.config = { ...this.config, state, mode: this.config.pendingMode, pendingMode: null };
    }
  }
}
