/**
 * The queues a server holds in memory (by key and by id, each organisation seeing its own) and,
 * with several replicas, the sync that brings these copies up to the committed versions.
 */
import { isoTime, type ImpactedTargets, type Repo } from '../../contract/index.js';
import { testBasis, type Effect, type QueueModel } from '../../engine/index.js';
import type { Fence, Store, StoredQueue } from '../../store/index.js';
import { badRequest, notFound, ofTokenOrg } from '../errors.js';
import type { RepoOwners } from '../ownership.js';
import type { QueueWriter } from './writer.js';

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

/** Repository identity is case-insensitive (as on GitHub): keys and stored names are lower case. */
export function normaliseRepo(repo: Repo): Repo {
  return {
    host: repo.host.trim().toLowerCase(),
    owner: repo.owner.trim().toLowerCase(),
    name: repo.name.trim().toLowerCase(),
  };
}

export function queueKey(org: string, repo: Repo, branch: string): string {
  return `${org}\n${repo.host}\n${repo.owner}\n${repo.name}\n${branch}`;
}

export const describeRepo = (repo: Repo) =>
  repo.host === 'github.com' ? `${repo.owner}/${repo.name}` : `${repo.host}/${repo.owner}/${repo.name}`;

/** The queues in memory, found by key or id; an organisation sees only what it may. */
export class QueueRegistry {
  private readonly byKey = new Map<string, QueueHandle>();
  private readonly byId = new Map<string, QueueHandle>();

  constructor(private readonly owners?: RepoOwners) {}

  handleOf(q: StoredQueue): QueueHandle {
    return { ...q, key: queueKey(q.org, q.repo, q.model.branch), getQueueBody: null };
  }

  register(handle: QueueHandle): void {
    this.byKey.set(handle.key, handle);
    this.byId.set(handle.id, handle);
  }

  unregister(handle: QueueHandle): void {
    this.byKey.delete(handle.key);
    this.byId.delete(handle.id);
  }

  /** The queue registered under `key`, whoever may see it. */
  byKeyOf(key: string): QueueHandle | undefined {
    return this.byKey.get(key);
  }

  /** Every queue (all organisations). */
  queues(): QueueHandle[] {
    return [...this.byId.values()];
  }

  /** The queues an organisation sees: its own, in repositories it owns (or nobody owns). */
  queuesOf(org: string): QueueHandle[] {
    return this.queues().filter((q) => q.org === org && this.allows(org, q.repo));
  }

  /** Whether `org` may see `repo` (it belongs to no other organisation). */
  private allows(org: string, repo: Repo): boolean {
    return this.owners?.allows(org, repo) ?? true;
  }

  byQueueId(id: string): QueueHandle | undefined {
    return this.byId.get(id);
  }

  find(org: string, repo: Repo, branch: string): QueueHandle | undefined {
    const handle = this.byKey.get(queueKey(org, normaliseRepo(repo), branch));
    // A queue made before the repository went to another organisation is hidden like a missing one.
    return handle && this.allows(org, handle.repo) ? handle : undefined;
  }

  /** The queue or a 404 (also for another organisation's queue: existence is never revealed). */
  require(org: string, repo: Repo, branch: string): QueueHandle {
    const handle = this.find(org, repo, branch);
    if (!handle) throw notFound(`no merge queue for branch "${branch}" in ${describeRepo(normaliseRepo(repo))} ${ofTokenOrg(org)}`);
    return handle;
  }

  /**
   * 400 when a queue of the repository already merged PR `prNumber`: a forge that cannot tell
   * (the sandbox) would otherwise let it land again. Runs in the writer, so a merge that finished
   * while the forge was asked is seen.
   */
  refuseMerged(handle: QueueHandle, prNumber: number): void {
    for (const q of this.queuesOf(handle.org)) {
      if (
        q.repo.host !== handle.repo.host ||
        q.repo.owner !== handle.repo.owner ||
        q.repo.name !== handle.repo.name
      )
        continue;
      const merged = q.model.entries.find((e) => e.prNumber === prNumber && e.state === 'merged');
      if (merged) {
        const when = merged.concludedAt === null ? '' : ` at ${isoTime(merged.concludedAt)}`;
        throw badRequest(
          `pull request #${prNumber} is already merged: the ${q.model.branch} queue merged it${when}`,
        );
      }
    }
  }
}

/**
 * Several replicas: keeps the copies of one replica's registry up to the versions committed by
 * any replica (queues created, changed or deleted elsewhere). A no-op for a lone server.
 */
export class ReplicaSync {
  constructor(
    private readonly store: Store,
    private readonly registry: QueueRegistry,
    private readonly writer: QueueWriter,
    private readonly replicas?: ReplicaView,
  ) {}

  /**
   * Several replicas: brings this replica's copy of one queue up to the committed version (a
   * queue created, changed or deleted by another replica). Reads call it first, so an answer is
   * never older than a write another replica acknowledged. A no-op for a lone server.
   * Usually the replica's LISTEN connection vouches for the copy (Replicas.caughtUp, one barrier
   * shared by the requests in flight); only when it cannot is the version looked up here.
   */
  async sync(org: string, rawRepo: Repo, branch: string): Promise<void> {
    if (!this.replicas || (await this.replicas.caughtUp())) return;
    const repo = normaliseRepo(rawRepo);
    const key = queueKey(org, repo, branch);
    const found = await this.store.findQueueVersion(org, repo, branch);
    const local = this.registry.byKeyOf(key);
    if (local && (!found || found.id !== local.id)) this.writer.serialize(key, async () => this.registry.unregister(local));
    if (found && (!local || local.id !== found.id || local.version < found.version)) await this.refresh(found.id);
  }

  /** Several replicas: brings every copy up to the committed versions, adds queues created elsewhere, drops deleted ones. */
  async syncAll(): Promise<void> {
    if (!this.replicas) return;
    const committed = await this.store.queueVersions();
    const ids = new Set(committed.map((q) => q.id));
    for (const local of this.registry.queues()) {
      if (!ids.has(local.id)) await this.writer.serialize(local.key, async () => this.registry.unregister(local));
    }
    for (const { id, version } of committed) await this.refresh(id, version);
  }

  /**
   * Several replicas: reloads a queue from the database if the copy here is older than `version` (or missing).
   * Reloads of one queue run one after the other, so a copy loaded before the queue was deleted (or
   * changed) never lands after a later reload that saw the deletion.
   */
  async refresh(queueId: string, version?: number): Promise<void> {
    const local = this.registry.byQueueId(queueId);
    if (local && version !== undefined && local.version >= version) return;
    await this.writer.serialize(`reload\n${queueId}`, async () => this.reload(queueId, version));
  }

  private async reload(queueId: string, version?: number): Promise<void> {
    const local = this.registry.byQueueId(queueId);
    if (local && version !== undefined && local.version >= version) return;
    const stored = await this.store.loadQueue(queueId);
    if (!stored) {
      if (local) await this.writer.serialize(local.key, async () => this.registry.unregister(local));
      return;
    }
    const handle = this.registry.handleOf(stored);
    await this.writer.serialize(handle.key, async () => {
      const current = this.registry.byQueueId(queueId);
      if (!current) {
        // A queue another replica created (or a new copy after a delete and re-create).
        const stale = this.registry.byKeyOf(handle.key);
        if (stale) this.registry.unregister(stale);
        this.registry.register(handle);
        this.writer.adopt(handle, null);
      } else if (current.version < stored.version) this.writer.replaceModel(current, stored);
    });
  }
}

/**
 * The effects a driving replica owes for changes it did not make itself (another replica
 * committed them): test runs that started, runs that stopped, merges that were asked for.
 * With no earlier copy, every run in progress and every pending merge (as on a restart).
 */
export function effectsBetween(before: QueueModel | null, after: QueueModel): Effect[] {
  const old = new Map((before?.runs ?? []).map((r) => [r.id, r]));
  const effects: Effect[] = [];
  for (const run of after.runs) {
    const was = old.get(run.id);
    if (run.status === 'in_progress' && was?.status !== 'in_progress') effects.push({ type: 'startTestRun', runId: run.id, basis: testBasis(after, run) });
    if (run.mergeRequested && !was?.mergeRequested)
      effects.push({ type: 'merge', runId: run.id, prNumbers: run.mergePrNumbers ?? run.prNumbers });
  }
  const now = new Map(after.runs.map((r) => [r.id, r]));
  for (const was of old.values()) {
    if (was.status === 'in_progress' && now.get(was.id)?.status !== 'in_progress') effects.push({ type: 'cancelTestRun', runId: was.id });
  }
  return effects;
}
