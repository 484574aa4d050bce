/**
 * What the v2 handlers share: the queue service and links, the lookups of a queue, a pull request
 * and a repository by their v2 ids (404 with Trunk's codes, also for another organisation's), and
 * the repositories this server has named an id for.
 */
import type { Repo } from '../../../contract/index.js';
import { isTerminal, type Entry } from '../../../engine/index.js';
import type { Links } from '../../links.js';
import type { QueueHandle } from '../../queue/handle.js';
import type { QueueService } from '../../queue/service.js';
import { V2Error } from './errors.js';
import { prIdsOf, repositoryId } from './ids.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface FoundPr {
  queue: QueueHandle;
  prNumber: number;
  entry: Entry;
}

export class V2Context {
  /** Repository id → repository, for the ids this server handed out (resolve by URL) or holds queues of. */
  private readonly repositories = new Map<string, { org: string; repo: Repo }>();

  constructor(
    readonly service: QueueService,
    readonly links: Links,
    /** The server's clock (tests and the simulator may pass their own). */
    readonly now: () => number = Date.now,
  ) {}

  /** The organisation's queues, brought up to the committed versions (several replicas). */
  async queuesOf(org: string): Promise<QueueHandle[]> {
    await this.service.replicaSync.syncAll();
    return this.service.registry.queuesOf(org);
  }

  /** The queue of `id`, as registered now, or 404 MERGE_QUEUE_NOT_FOUND. */
  async queue(org: string, id: string): Promise<QueueHandle> {
    const { registry, replicaSync } = this.service;
    let found = registry.byQueueId(id);
    // A lone server's copy is the committed one: the queue registered under the id is the answer.
    if (found && replicaSync.alone && registry.isCurrentFor(found, org)) return found;
    if (!found) {
      await replicaSync.syncAll();
      found = registry.byQueueId(id);
    }
    if (!found || found.org !== org || !registry.find(org, found.repo, found.model.branch))
      throw new V2Error(404, 'MERGE_QUEUE_NOT_FOUND', `no merge queue with id ${id}`);
    return replicaSync.queue(org, found.repo, found.model.branch);
  }

  /** The PR of `id` (its live entry, else its latest), or 404 PR_NOT_FOUND; 400 for an id that is no UUID. */
  async pullRequest(org: string, id: string): Promise<FoundPr> {
    if (!UUID.test(id))
      throw new V2Error(400, 'VALIDATION_FAILED', `id: ${id} is not a pull request id (a UUID)`);
    const found = this.findPullRequest(await this.queuesOf(org), id.toLowerCase());
    if (!found) throw new V2Error(404, 'PR_NOT_FOUND', `no pull request with id ${id}`);
    return found;
  }

  /** The PR of `id` among `queues`: its live entry wins, else the latest submission. */
  findPullRequest(queues: readonly QueueHandle[], id: string): FoundPr | undefined {
    let best: FoundPr | undefined;
    for (const queue of queues) {
      const prNumber = prIdsOf(queue).get(id);
      if (prNumber === undefined) continue;
      for (const entry of queue.model.entries) {
        if (entry.prNumber !== prNumber) continue;
        const live = !isTerminal(entry.state);
        const bestLive = best ? !isTerminal(best.entry.state) : false;
        if (!best || (live && !bestLive) || (live === bestLive && entry.submittedAt > best.entry.submittedAt))
          best = { queue, prNumber, entry };
      }
    }
    return best;
  }

  /** Notes a repository an id was given for, so that the id can be used (create a queue). */
  remember(org: string, repo: Repo): string {
    const id = repositoryId(org, repo);
    this.repositories.set(id, { org, repo });
    return id;
  }

  /** The repository of `id` for `org`, or 404 REPOSITORY_NOT_FOUND. */
  async repository(org: string, id: string): Promise<Repo> {
    for (const q of await this.queuesOf(org)) this.remember(org, q.repo);
    const known = this.repositories.get(id.toLowerCase());
    if (!known || known.org !== org)
      throw new V2Error(404, 'REPOSITORY_NOT_FOUND', `no repository with id ${id}`);
    return known.repo;
  }
}
