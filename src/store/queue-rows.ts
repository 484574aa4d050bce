/**
 * The queue as the store keeps it (queues.ts): a stored queue, a replica's lease fence, the
 * history's transitions, and the rows one engine step changes.
 */
import { sql } from 'kysely';
import type { ImpactedTargets, PullRequestState, Repo } from '../contract/index.js';
import { defaultConfig } from '../engine/model.js';
import { changedItems } from '../engine/working-set.js';
import type { Entry, QueueConfig, QueueModel, TestRun } from '../engine/types.js';

/** A replica's hold on a queue: written by it, checked by every write the driving replica makes. */
export interface Fence {
  holder: string;
  fence: number;
}

/** The lease went to another replica (or expired): the write is refused and the replica stops driving. */
export class LeaseLostError extends Error {
  constructor(readonly queueId: string) {
    super(`queue ${queueId}: this replica no longer holds its lease`);
    this.name = 'LeaseLostError';
  }
}

/** The database's clock in epoch milliseconds (leases are timed by it, never by a replica's clock). */
export const DB_NOW_MS = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

/** A queue as stored: its identity and the engine model, plus impacted targets per (PR, head SHA). */
export interface StoredQueue {
  id: string;
  /** Bumped by every committed step. */
  version: number;
  org: string;
  repo: Repo;
  model: QueueModel;
  /** Key `${prNumber}:${headSha}`. */
  impactedTargets: Map<string, ImpactedTargets>;
}

export interface ImpactedTargetsWrite {
  prNumber: number;
  headSha: string;
  targets: ImpactedTargets;
}

/** One state change of a pull request's queue entry, as the history keeps it. */
export interface PrTransition {
  entryId: string;
  prNumber: number;
  from: PullRequestState | null;
  to: PullRequestState;
  reason: string | null;
  /** The test run of the entry after the change (testing and later states), else null. */
  testRunId: string | null;
  /** For failures: what went wrong, for people (conflicting PR and files, config problem, failed checks). */
  detail: string | null;
  at: number;
}

/** The LISTEN/NOTIFY channel on which replicas announce `queueId:version` after each write. */
export const QUEUE_CHANNEL = 'railyard_queues';

export function impactedTargetsKey(prNumber: number, headSha: string): string {
  return `${prNumber}:${headSha}`;
}

export const ENTRY_CHUNK = 200;

export function entryRow(queueId: string, e: Entry) {
  return {
    id: e.id,
    queue_id: queueId,
    pr_number: e.prNumber,
    state: e.state,
    seq: e.seq,
    head_sha: e.pr.headSha,
    head_branch: e.pr.headBranch,
    state_changed_at: e.stateChangedAt,
    concluded_at: e.concludedAt,
    data: JSON.stringify(e),
  };
}

export function runRow(queueId: string, r: TestRun) {
  return { id: r.id, queue_id: queueId, status: r.status, started_at: r.startedAt, data: JSON.stringify(r) };
}

/** The rows one engine step changes: entries and runs to upsert or delete, and whether the settings changed. */
export interface QueueChange {
  entries: { upsert: Entry[]; remove: string[] };
  runs: { upsert: TestRun[]; remove: string[] };
  configChanged: boolean;
  empty: boolean;
}

export function changeOf(before: QueueModel, after: QueueModel): QueueChange {
  const entries = diff(before.entries, after.entries);
  const runs = diff(before.runs, after.runs);
  const configChanged = before.config !== after.config || before.nextSeq !== after.nextSeq;
  const empty =
    !entries.upsert.length &&
    !entries.remove.length &&
    !runs.upsert.length &&
    !runs.remove.length &&
    !configChanged;
  return { entries, runs, configChanged, empty };
}

/** What changed between two models: rows to upsert and ids to delete (by position: see changedItems). */
function diff<T extends { id: string }>(
  before: readonly T[],
  after: readonly T[],
): { upsert: T[]; remove: string[] } {
  const { upsert, remove } = changedItems(before, after);
  return { upsert, remove };
}

/** The settings a queue stored before the flaky-aware queue (or freezes) lacks, at their defaults (behaviour unchanged). */
export function flakyDefaults(): Pick<
  QueueConfig,
  | 'flakyPolicy'
  | 'flakyReportGraceSeconds'
  | 'flakyRetries'
  | 'probationThreshold'
  | 'freezes'
  | 'freezeBypassPriority'
> {
  const {
    flakyPolicy,
    flakyReportGraceSeconds,
    flakyRetries,
    probationThreshold,
    freezes,
    freezeBypassPriority,
  } = defaultConfig();
  return {
    flakyPolicy,
    flakyReportGraceSeconds,
    flakyRetries,
    probationThreshold,
    freezes,
    freezeBypassPriority,
  };
}
