/**
 * Several replicas on one database: brings the copies of a replica's registry up to the versions
 * any replica committed (queues created, changed or deleted elsewhere), and gives a request the
 * queue it names, brought up to date first. A no-op for a lone server.
 */
import type { Repo } from '../../contract/index.js';
import type { Store } from '../../store/index.js';
import type { QueueHandle, ReplicaView } from './handle.js';
import { normaliseRepo, queueKey } from './keys.js';
import type { QueueRegistry } from './registry.js';
import type { QueueWriter } from './writer.js';

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

  /** Whether this server is the only one on its database: its copies are the committed versions. */
  get alone(): boolean {
    return !this.replicas;
  }

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
    const found = await this.store.queues.findQueueVersion(org, repo, branch);
    const local = this.registry.byKeyOf(key);
    if (local && (!found || found.id !== local.id))
      this.writer.serialize(key, async () => this.registry.unregister(local));
    if (found && (!local || local.id !== found.id || local.version < found.version))
      await this.refresh(found.id);
  }

  /**
   * The queue a request names, its copy brought up to date first (several replicas), or a 404:
   * what a route asks for once and passes to the operations.
   */
  async queue(org: string, repo: Repo, branch: string): Promise<QueueHandle> {
    await this.sync(org, repo, branch);
    return this.registry.require(org, repo, branch);
  }

  /** Several replicas: brings every copy up to the committed versions, adds queues created elsewhere, drops deleted ones. */
  async syncAll(): Promise<void> {
    if (!this.replicas) return;
    const committed = await this.store.queues.queueVersions();
    const ids = new Set(committed.map((q) => q.id));
    for (const local of this.registry.queues()) {
      if (!ids.has(local.id))
        await this.writer.serialize(local.key, async () => this.registry.unregister(local));
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
    const stored = await this.store.queues.loadQueue(queueId);
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
