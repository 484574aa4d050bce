/**
 * The queues a server holds in memory, by key and by id, each organisation seeing its own: where
 * routes, workers and replicas find a queue. Its copies are brought up to the committed versions
 * by ReplicaSync (replica-sync.ts) when several replicas share a database.
 */
import { isoTime, type Repo } from '../../contract/index.js';
import type { StoredQueue } from '../../store/index.js';
import { badRequest, notFound, ofTokenOrg } from '../errors.js';
import type { RepoOwners } from '../access/ownership.js';
import type { QueueHandle } from './handle.js';
import { describeRepo, normaliseRepo, queueKey } from './keys.js';

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

  /**
   * Whether `handle` (found by id) is the queue registered now under its key and `org` may see it:
   * what `find` answers for its coordinates, without building the key again.
   */
  isCurrentFor(handle: QueueHandle, org: string): boolean {
    return handle.org === org && this.byKey.get(handle.key) === handle && this.allows(org, handle.repo);
  }

  find(org: string, repo: Repo, branch: string): QueueHandle | undefined {
    const handle = this.byKey.get(queueKey(org, normaliseRepo(repo), branch));
    // A queue made before the repository went to another organisation is hidden like a missing one.
    return handle && this.allows(org, handle.repo) ? handle : undefined;
  }

  /** The queue or a 404 (also for another organisation's queue: existence is never revealed). */
  require(org: string, repo: Repo, branch: string): QueueHandle {
    const handle = this.find(org, repo, branch);
    if (!handle)
      throw notFound(
        `no merge queue for branch "${branch}" in ${describeRepo(normaliseRepo(repo))} ${ofTokenOrg(org)}`,
      );
    return handle;
  }

  /** The queue as registered now (a handle held across an await may have been replaced), or a 404. */
  current(queue: QueueHandle): QueueHandle {
    return this.require(queue.org, queue.repo, queue.model.branch);
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
