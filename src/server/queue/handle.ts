/**
 * What the queue's parts share: one queue as the server holds it (QueueHandle) and how a replica
 * shares its database with others (ReplicaView). Types only, so the registry, the writer, the
 * history and the answers depend on this file and not on each other.
 */
import type { ImpactedTargets, Repo } from '../../contract/index.js';
import type { QueueModel } from '../../engine/index.js';
import type { Fence } from '../../store/index.js';

/** One queue as the server holds it: identity, the current engine model, read caches. */
export interface QueueHandle {
  readonly id: string;
  readonly org: string;
  readonly repo: Repo;
  readonly key: string;
  /** The committed model: replaced (never mutated) after each persisted step. */
  model: QueueModel;
  /** Impacted targets per `${prNumber}:${headSha}`, also for PRs not (yet) submitted. */
  impactedTargets: Map<string, ImpactedTargets>;
  /** Serialized getQueue answer; null after a change. */
  getQueueBody: Buffer | null;
  /** The committed version this copy is at (several replicas: another replica may be ahead). */
  version: number;
}

/**
 * How a replica shares its database with others (PostgreSQL): which queues it drives, and the
 * fence its driving writes carry. Without it the server is the only one and drives every queue.
 */
export interface ReplicaView {
  /** The fence of the lease this replica holds on the queue, or undefined if another replica drives it. */
  fence(queueId: string): Fence | undefined;
  /** Whether the copies here hold every write any replica acknowledged before the call (false: ask the database). */
  caughtUp(): Promise<boolean>;
}
