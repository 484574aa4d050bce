/**
 * The v2 API's ids. A queue's id is its stored id (a random UUID kept with the queue), so it is
 * the same on every replica and after a restart. Repositories and pull requests have no row of
 * their own: their ids are UUID-shaped digests of the organisation, the repository and (for a
 * pull request) its number, so they are stable too, and an id made for one organisation never
 * names anything of another (a lookup only ever searches the caller's organisation: 404).
 */
import { createHash } from 'node:crypto';
import type { Repo } from '../../../contract/index.js';
import type { QueueHandle } from '../../queue/handle.js';

/** A UUID (version 8: custom) from a digest of `parts`. */
function uuidOf(kind: string, parts: readonly string[]): string {
  const hex = createHash('sha256')
    .update(`railyard:${kind}\0${parts.join('\0')}`)
    .digest('hex');
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

const repoParts = (org: string, repo: Repo) => [
  org,
  repo.host.toLowerCase(),
  repo.owner.toLowerCase(),
  repo.name.toLowerCase(),
];

export function repositoryId(org: string, repo: Repo): string {
  return uuidOf('repository', repoParts(org, repo));
}

/** Ids made so far (a digest per PR per read of a long list adds up); emptied when it grows past its cap. */
const prIdMemo = new Map<string, string>();
const PR_ID_MEMO_MAX = 100_000;

export function pullRequestId(org: string, repo: Repo, prNumber: number): string {
  const parts = [...repoParts(org, repo), String(prNumber)];
  const key = parts.join('\0');
  let id = prIdMemo.get(key);
  if (id === undefined) {
    if (prIdMemo.size >= PR_ID_MEMO_MAX) prIdMemo.clear();
    id = uuidOf('pull-request', parts);
    prIdMemo.set(key, id);
  }
  return id;
}

/** The ids of the PRs of one queue version (models are replaced, never changed: cached per model). */
const prIdsOfModel = new WeakMap<object, Map<string, number>>();

/** PR id → PR number, for the PRs with an entry in the queue. */
export function prIdsOf(queue: QueueHandle): Map<string, number> {
  let ids = prIdsOfModel.get(queue.model);
  if (!ids) {
    ids = new Map();
    for (const e of queue.model.entries)
      ids.set(pullRequestId(queue.org, queue.repo, e.prNumber), e.prNumber);
    prIdsOfModel.set(queue.model, ids);
  }
  return ids;
}
